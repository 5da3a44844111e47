"""Models of the ``webapp`` app: the webhooks live in webapp/webhooks/ and register here."""

from __future__ import annotations

from webapp.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery  # noqa: F401
