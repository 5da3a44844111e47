"""Writes for API tokens: create (the key is returned once), look up a presented key, revoke."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webapp.accounts.models import KEY_PREFIX_CHARS, ApiToken, key_hash

LAST_USED_RESOLUTION = timedelta(minutes=1)  # last_used_at is written at most this often per token


class TokenRefused(Exception):
    """A presented key that does not authenticate; the message says why (unknown, expired, inactive user)."""


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    key: str  # shown to the user once; only its hash is stored


def api_token_create(*, user: AbstractBaseUser, name: str = "", ttl_hours: int | None = None) -> NewToken:
    """A new token for ``user`` valid for ``ttl_hours`` (default API_TOKEN_TTL_HOURS; 0: no expiry).

    The user's expired tokens are removed on the way: they can never authenticate again.
    """
    ttl_hours = settings.API_TOKEN_TTL_HOURS if ttl_hours is None else ttl_hours
    if ttl_hours < 0:
        raise ValueError(f"ttl_hours must be 0 (no expiry) or more, got {ttl_hours}")
    now = timezone.now()
    ApiToken.objects.filter(user=user, expires_at__lte=now).delete()
    key = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, key_hash=key_hash(key), key_prefix=key[:KEY_PREFIX_CHARS], name=name[:100], created_at=now,
        expires_at=now + timedelta(hours=ttl_hours) if ttl_hours else None,
    )  # fmt: skip
    return NewToken(token, key)


def api_token_authenticate(key: str) -> ApiToken:
    """The token a presented key belongs to, with its user; TokenRefused saying why not."""
    token = ApiToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
    if token is None:
        raise TokenRefused("Invalid token.")
    now = timezone.now()
    if token.is_expired(now):
        raise TokenRefused(
            f"Token {token.key_prefix}… expired at {token.expires_at:%Y-%m-%d %H:%M} UTC; get a new one with POST /api/auth/token/."
        )
    if not token.user.is_active:
        raise TokenRefused("User inactive or deleted.")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> bool:
    """Delete one of ``user``'s tokens; False when it is not theirs (or already gone)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return bool(deleted)


def api_tokens_revoke_all(*, user: AbstractBaseUser) -> int:
    """Delete every token of ``user``; how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted
