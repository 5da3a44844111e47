"""The answer to a locked-out login (django-axes' AXES_LOCKOUT_CALLABLE): 429, saying why and for how long.

The API gets JSON in DRF's shape (``{"detail": ...}``); the login page gets a page that
says the same thing, never a bare "Forbidden".
"""

from __future__ import annotations

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse

LOCKED_STATUS = 429


def client_address(request: HttpRequest) -> str | None:
    """The address lockouts count (AXES_CLIENT_IP_CALLABLE): REMOTE_ADDR, or behind AXES_IPWARE_PROXY_COUNT
    reverse proxies the X-Forwarded-For entry the outermost of them added. Entries further left are the
    client's to choose, so they are never trusted (else each guess could claim a fresh address)."""
    proxies = settings.AXES_IPWARE_PROXY_COUNT or 0
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and forwarded:
        return forwarded[-min(proxies, len(forwarded))]  # as DRF's throttles read it with NUM_PROXIES
    return request.META.get("REMOTE_ADDR")


def lockout_message(request: HttpRequest, credentials: dict | None) -> tuple[str, int | None]:
    """The message and the cool-off in whole seconds (None when locked until an administrator resets it)."""
    cool_off = get_cool_off(request)
    username = (credentials or {}).get("username") or "this account"
    limit = settings.AXES_FAILURE_LIMIT
    if cool_off:
        minutes = max(1, round(cool_off.total_seconds() / 60))
        return (
            f"Too many failed logins: {username!s} is locked out from your address for {minutes} minute(s) "
            f"after {limit} wrong passwords in a row. Wait, then try again.",
            int(cool_off.total_seconds()),
        )
    return f"Too many failed logins: {username!s} is locked out from your address until an administrator unlocks it.", None


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None) -> HttpResponse:
    message, retry_after = lockout_message(request, credentials)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=LOCKED_STATUS)
    else:
        response = TemplateResponse(request, "accounts/locked_out.html", {"message": message}, status=LOCKED_STATUS).render()
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response
