"""Django's admin for staff only, with the app's own 403 page for everyone else who is signed in.

Django's admin sends a signed-in user who is not staff to its own login page ("You are authenticated
as anna, but are not authorized to access this page"), a dead end that looks like a broken sign-in.
Here that user gets the app's 403 page (``templates/403.html`` through ``handler403``); someone not
signed in still gets the admin's login page. ``WebappAdminConfig`` replaces ``django.contrib.admin``
in INSTALLED_APPS so ``admin.site`` is this site (Django's documented way to override the default site).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

STAFF_ONLY = "the admin is for staff accounts"


class StaffAdminSite(admin.AdminSite):
    def _refuse_signed_in_non_staff(self, request: HttpRequest) -> None:
        if request.path == reverse("admin:logout", current_app=self.name):
            return  # signing out is never refused
        if request.user.is_authenticated and not self.has_permission(request):
            raise PermissionDenied(STAFF_ONLY)

    def admin_view(self, view: Callable, cacheable: bool = False) -> Callable:
        inner = super().admin_view(view, cacheable)

        @wraps(inner)
        def staff_only(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            self._refuse_signed_in_non_staff(request)
            return inner(request, *args, **kwargs)

        return staff_only

    @login_not_required  # as Django's own: the login page must open for anonymous visitors
    def login(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        self._refuse_signed_in_non_staff(request)
        return super().login(request, extra_context)


class WebappAdminConfig(AdminConfig):
    default_site = "webapp.admin_site.StaffAdminSite"
