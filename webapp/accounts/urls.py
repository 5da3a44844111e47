"""Account pages: API tokens, the invite link's password page, the session probe (login and logout: Django's, in webapp/urls.py)."""

from __future__ import annotations

from django.urls import path

from webapp.accounts import views
from webapp.accounts.invites import InviteAcceptView

app_name = "accounts"

urlpatterns = [
    path("tokens/", views.api_tokens, name="api_tokens"),
    path("tokens/new/", views.api_token_create, name="api_token_create"),
    path("tokens/<int:token_id>/revoke/", views.api_token_revoke, name="api_token_revoke"),
    path("tokens/revoke-all/", views.api_tokens_revoke_all, name="api_tokens_revoke_all"),
    path("invite/<uidb64>/<token>/", InviteAcceptView.as_view(), name="invite_accept"),
    path("session/", views.session_probe, name="session"),
    path("landing/", views.landing, name="landing"),
]
