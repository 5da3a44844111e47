"""The "API tokens" page under the account menu (my tokens: created, last used, expires; a new one; revoke), the session
probe, and where a login lands.

A new key is shown once, in the answer to the POST that made it; only its hash is stored.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation.projects.worklist import lands_on_tasks
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


@login_not_required
@require_GET
@never_cache
def session_probe(request: HttpRequest) -> HttpResponse:
    """Whether this browser is signed in, as whom, and the CSRF token its next POST must carry, as JSON.

    A page that outlived its session asks it (the annotation screen, when a save is answered by the
    login page or a CSRF refusal): after a log-in in another tab, the page takes the new token and
    sends what was waiting. Open to everyone, since a signed-out page must be able to ask; it tells
    nothing beyond the user's own id and name. Never cached; other sites cannot read it (same-origin).
    """
    user = request.user
    signed_in = bool(user.is_authenticated)
    return JsonResponse(
        {
            "authenticated": signed_in,
            "user_id": user.pk if signed_in else None,
            "username": user.get_username() if signed_in else "",
            "csrf_token": get_token(request),
        }
    )


@require_GET
def landing(request: HttpRequest) -> HttpResponse:
    """Where a login without ``next`` goes (LOGIN_REDIRECT_URL): annotators to My tasks, everyone else to Corpora."""
    return redirect("annotation:task_list" if lands_on_tasks(request.user) else "alignment:corpus_list")
