"""Serving in production: error pages, favicon, DEBUG off by default, `check --deploy`, the CSP header."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import connection
from django.test import Client, override_settings
from django.urls import path
from rest_framework.views import APIView

from webapp import error_views
from webapp.urls import handler400, handler403, handler404, handler500  # noqa: F401 - the test URLconf's handlers
from webapp.urls import urlpatterns as app_urlpatterns

REPO_ROOT = Path(__file__).resolve().parents[2]
LEAKS = ("Traceback", "URLconf", "settings", "DEBUG", "RuntimeError", "boom")


def _raise_bad_request(request):
    raise SuspiciousOperation("boom")


def _raise_permission_denied(request):
    raise PermissionDenied("boom")


def _raise_error(request):
    raise RuntimeError("boom")


class _RaisingApiView(APIView):
    def get(self, request):
        raise RuntimeError("boom")


urlpatterns = [
    path("test/bad-request/", _raise_bad_request),
    path("test/forbidden/", _raise_permission_denied),
    path("test/error/", _raise_error),
    path("api/test/error/", _RaisingApiView.as_view()),
    *app_urlpatterns,
]


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    client.raise_request_exception = False  # as in production: the 500 handler answers
    return client


def _assert_app_page(response, status: int, sentence: str) -> str:
    assert response.status_code == status
    body = response.content.decode()
    assert sentence in body
    assert 'class="topbar"' in body and "Go to the start page" in body, "the app's layout with a way back"
    for leak in LEAKS:
        assert leak not in body, f"the {status} page shows {leak!r}"
    return body


@pytest.mark.urls(__name__)
@override_settings(DEBUG=False)
@pytest.mark.parametrize(
    ("url", "status", "sentence"),
    [
        ("/test/bad-request/", 400, "The request could not be understood"),
        ("/test/forbidden/", 403, "You do not have access to this page"),
        ("/no/such/page/", 404, "Page not found"),
        ("/test/error/", 500, "Something went wrong on our side"),
    ],
)
def test_error_pages_are_the_apps_own_and_show_no_internals(signed_in, url, status, sentence):
    body = _assert_app_page(signed_in.get(url), status, sentence)
    assert 'href="/annotate/' in body, "a signed-in user keeps the navigation"


@override_settings(DEBUG=False)
def test_not_found_page_for_a_visitor_who_is_not_logged_in(client, db):
    body = _assert_app_page(client.get("/no/such/page/"), 404, "Page not found")
    assert "/no/such/page/" in body


@pytest.mark.urls(__name__)
@override_settings(DEBUG=False)
def test_server_error_page_answers_even_when_its_template_fails(signed_in, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("template engine down")

    monkeypatch.setattr(error_views, "render_to_string", broken)
    response = signed_in.get("/test/error/")
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()
    assert "Traceback" not in response.content.decode()


@pytest.mark.urls(__name__)
@override_settings(DEBUG=False)
def test_unhandled_api_error_is_json_without_a_traceback(signed_in):
    response = signed_in.get("/api/test/error/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": error_views._JSON_DETAIL[500]}


@override_settings(DEBUG=False)
def test_unknown_api_url_is_a_json_404(signed_in):
    response = signed_in.get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


@override_settings(DEBUG=False)
def test_csrf_failure_is_the_apps_page_and_stores_nothing(db, owner):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "owner", "password": "owner-pass-123"})
    _assert_app_page(response, 403, "This form has expired")
    assert "_auth_user_id" not in client.session


def test_favicon_ico_answers_without_login_and_points_at_the_svg(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].endswith(".svg")
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    assert b"<svg" in b"".join(icon.streaming_content)


def test_every_page_links_the_favicon(client, db):
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/accounts/login/").content.decode()


def test_pages_carry_a_strict_content_security_policy(client, db):
    policy = dict(part.strip().split(" ", 1) for part in client.get("/accounts/login/")["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'", "no inline script, no eval"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
    assert policy["form-action"] == "'self'" and policy["base-uri"] == "'self'"


def test_api_docs_relax_the_policy_for_styles_only(signed_in):
    policy = signed_in.get("/api/docs/")["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline'" in policy
    assert "script-src 'self';" in policy, "Swagger's start-up script comes from a URL, not inline"


def _settings_subprocess(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)


def _base_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "BEHIND_HTTPS_PROXY", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    return {**env, "DJANGO_SETTINGS_MODULE": "webapp.settings", **extra}


def test_debug_is_off_unless_asked_for():
    read = ["-c", "from django.conf import settings; print(settings.DEBUG)"]
    # Settings only parse DATABASE_URL (no connection), so a placeholder keeps this quick.
    env = _base_env(DATABASE_URL="postgresql://nobody@localhost/none")
    assert _settings_subprocess(env, *read).stdout.strip() == "False"
    assert _settings_subprocess({**env, "DEBUG": "1"}, *read).stdout.strip() == "True"


def _test_database_url() -> str:
    params = connection.settings_dict
    host = str(params["HOST"])
    return f"postgresql://{params['USER']}@/{params['NAME']}?host={host}" + (f"&port={params['PORT']}" if params["PORT"] else "")


PRODUCTION = {
    "BEHIND_HTTPS_PROXY": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "ALLOWED_HOSTS": "aligner.example.org",
}


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_documented_production_variables(db):
    env = _base_env(DATABASE_URL=_test_database_url(), SECRET_KEY=secrets.token_urlsafe(50), **PRODUCTION)
    result = _settings_subprocess(env, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow
def test_check_deploy_warns_without_them(db):
    result = _settings_subprocess(_base_env(DATABASE_URL=_test_database_url()), "manage.py", "check", "--deploy")
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr + result.stdout
