"""Reads for accounts: a user's own API tokens."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from webapp.accounts.models import ApiToken


def user_api_tokens(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's tokens, newest first (expired ones included: the page says so, revoking removes them)."""
    return ApiToken.objects.filter(user=user)
