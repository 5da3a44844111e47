"""API tokens: many per user, stored as a SHA-256 hash, each with an expiry and a last-use time.

DRF's own ``Token`` keeps one plain-text key per user for ever: a leaked database row is a
working credential, a script's token cannot be replaced without breaking every other
script, and nothing ends it. Here the key is shown once, when it is created; the database
holds only its hash (a lookup by hash is as fast as by key, and a 256-bit random key needs
no slow hash), plus a short prefix so people can tell their tokens apart.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_PREFIX_CHARS = 8


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """One ``Authorization: Token <key>`` credential of a user; revoking it deletes the row."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key (hex); the key itself is not stored.")
    key_prefix = models.CharField(max_length=KEY_PREFIX_CHARS, help_text="The key's first characters, to recognise it.")
    name = models.CharField(max_length=100, blank=True, help_text="Where it came from or what uses it.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from then on; empty: never (API_TOKEN_TTL_HOURS=0).")

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"token {self.key_prefix}… of {self.user}"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())
