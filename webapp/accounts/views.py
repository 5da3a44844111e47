"""The "API tokens" page under the account menu: my tokens (created, last used, expires), a new one, revoke.

A new key is shown once, in the answer to the POST that made it; only its hash is stored.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from webapp.accounts import selectors, services


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, widget=forms.TextInput(attrs={"placeholder": "e.g. export script"}))


def _page(request: HttpRequest, form: ApiTokenForm, new_key: str = "", status: int = 200) -> HttpResponse:
    context = {
        "tokens": selectors.user_api_tokens(request.user), "form": form, "new_key": new_key, "now": timezone.now(),
        "ttl_hours": settings.API_TOKEN_TTL_HOURS,
    }  # fmt: skip
    return render(request, "accounts/api_tokens.html", context, status=status)


def api_tokens(request: HttpRequest) -> HttpResponse:
    return _page(request, ApiTokenForm())


@require_POST
def api_token_create(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    created = services.api_token_create(user=request.user, name=form.cleaned_data["name"] or "created on the tokens page")
    return _page(request, ApiTokenForm(), new_key=created.key, status=201)


@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if services.api_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, f"Token {token_id} revoked: it no longer authenticates.")
    else:
        messages.error(request, f"You have no token {token_id} (revoked already?).")
    return redirect("accounts:api_tokens")


@require_POST
def api_tokens_revoke_all(request: HttpRequest) -> HttpResponse:
    count = services.api_tokens_revoke_all(user=request.user)
    messages.success(request, f"{count} token(s) revoked.")
    return redirect("accounts:api_tokens")
