"""Accounts: API tokens (hashed, expiring, revocable), the login lockout answer."""
