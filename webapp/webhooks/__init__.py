"""Webhooks: HMAC-signed event deliveries to subscribers' URLs, retried with backoff, logged per delivery."""
