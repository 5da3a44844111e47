"""DRF authentication with our hashed, expiring API tokens; the header stays ``Authorization: Token <key>``."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from webapp.accounts.services import TokenRefused, api_token_authenticate


class ApiTokenAuthentication(TokenAuthentication):
    """As DRF's TokenAuthentication (same header, 401 with ``WWW-Authenticate: Token``), against ApiToken."""

    def authenticate_credentials(self, key: str):
        try:
            token = api_token_authenticate(key)
        except TokenRefused as error:
            raise AuthenticationFailed(str(error)) from None
        return token.user, token
