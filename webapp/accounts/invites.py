"""The invite link a project manager passes to a new annotator: it opens a page where they choose a password.

The link carries Django's password-reset token (``annotation.projects.members.invite_path``): it works
once (setting the password changes the hash it is made from) and for ``PASSWORD_RESET_TIMEOUT``.
Django's view moves the token from the URL into the session before showing the form, so the
token does not linger in the address bar or in Referer headers. The password is checked by
``AUTH_PASSWORD_VALIDATORS``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import PasswordResetConfirmView
from django.urls import reverse_lazy


class InviteAcceptView(PasswordResetConfirmView):
    template_name = "accounts/invite_accept.html"
    success_url = reverse_lazy("login")
    reset_url_token = "choose-password"

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, f"Password set. Log in as {form.user.get_username()}.")
        return response
