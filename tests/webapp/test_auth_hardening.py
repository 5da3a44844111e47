"""Logging in is throttled and locks out (login page and token endpoint), passwords are validated, and API tokens
are hashed, expire, and can be listed and revoked by their owner (page and API)."""

from __future__ import annotations

import importlib
import io
from datetime import timedelta
from types import SimpleNamespace

import pytest
from axes.models import AccessAttempt
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.accounts.lockout import client_address
from webapp.accounts.models import ApiToken, key_hash
from webapp.accounts.services import api_token_create
from webapp.demo import demo_accounts_ensure

pytestmark = pytest.mark.django_db

PASSWORD = "tram-line-harbour-42"
LOGIN = "/accounts/login/"
TOKEN_LOGIN = "/api/auth/token/"


@pytest.fixture(autouse=True)
def fresh_request_budgets(settings):
    """DRF counts requests in the process's cache: start every test with full budgets, and leave them full."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def rita(db):
    return get_user_model().objects.create_user("rita", password=PASSWORD)


@pytest.fixture
def sam(db):
    return get_user_model().objects.create_user("sam", password=PASSWORD)


def _cool_off_passes() -> None:
    """Move the recorded failures back past the cool-off (the clock is not ours to turn)."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))


def test_ten_wrong_passwords_lock_the_login_page_until_the_cool_off(client, rita, sam):
    answers = [client.post(LOGIN, {"username": "rita", "password": f"wrong-{n}"}).status_code for n in range(10)]
    assert answers == [200] * 9 + [429]

    refused = client.post(LOGIN, {"username": "rita", "password": PASSWORD})
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "Too many failed logins: rita is locked out from your address for 15 minute(s)" in text
    assert refused["Retry-After"] == "900" and "_auth_user_id" not in client.session
    assert client.post(LOGIN, {"username": "sam", "password": PASSWORD}).status_code == 302  # username + address, not the address

    _cool_off_passes()
    other = client.__class__()
    assert other.post(LOGIN, {"username": "rita", "password": PASSWORD}).status_code == 302


def test_ten_wrong_passwords_lock_the_token_endpoint_too(rita):
    api = APIClient()
    answers = [api.post(TOKEN_LOGIN, {"username": "rita", "password": f"wrong-{n}"}, format="json") for n in range(10)]
    assert [answer.status_code for answer in answers] == [400] * 9 + [429]
    assert "Too many failed logins: rita is locked out" in answers[-1].json()["detail"]

    refused = api.post(TOKEN_LOGIN, {"username": "rita", "password": PASSWORD}, format="json")
    assert refused.status_code == 429 and "token" not in refused.json()
    assert not ApiToken.objects.exists()

    _cool_off_passes()
    assert api.post(TOKEN_LOGIN, {"username": "rita", "password": PASSWORD}, format="json").status_code == 200


def test_failures_on_the_page_and_the_token_endpoint_add_up(client, rita):
    for n in range(5):
        client.post(LOGIN, {"username": "rita", "password": f"wrong-{n}"})
    api = APIClient()
    answers = [api.post(TOKEN_LOGIN, {"username": "rita", "password": "nope"}, format="json").status_code for _ in range(5)]
    assert answers == [400] * 4 + [429]


def test_the_token_endpoint_has_its_own_tight_request_budget(db):
    """20 a minute from one address whatever the usernames (which axes counts separately)."""
    api = APIClient()
    answers = [api.post(TOKEN_LOGIN, {"username": f"user{n}", "password": "x"}, format="json") for n in range(21)]
    assert [answer.status_code for answer in answers] == [400] * 20 + [429]
    assert "throttled" in answers[-1].json()["detail"]


@pytest.mark.parametrize(
    ("password", "reason"),
    [("12345678", "This password is too common."), ("12345678", "This password is entirely numeric."), ("short-1", "at least 10")],
)
def test_weak_passwords_are_refused_by_the_validators(rita, password, reason):
    with pytest.raises(ValidationError) as refused:
        validate_password(password, rita)
    assert any(reason in message for message in refused.value.messages)
    with pytest.raises(ValidationError, match="too similar to the username"):
        validate_password("ritar", rita)


def test_the_admin_refuses_to_create_a_user_with_a_weak_password(client, settings):
    admin = get_user_model().objects.create_superuser("boss", password=PASSWORD)
    client.force_login(admin)
    response = client.post(
        "/admin/auth/user/add/", {"username": "weak", "usable_password": "true", "password1": "12345678", "password2": "12345678"}
    )
    assert response.status_code == 200
    assert "This password is too common." in response.content.decode()
    assert not get_user_model().objects.filter(username="weak").exists()


def test_the_demo_refuses_a_weak_password_from_the_environment_and_its_own_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_MANAGER_PASSWORD", "12345678")
    with pytest.raises(ValueError, match="DEMO_MANAGER_PASSWORD is refused: .*too common"):
        demo_accounts_ensure(tmp_path)
    assert not (tmp_path / "demo-credentials.json").exists() and not get_user_model().objects.filter(username="manager").exists()

    monkeypatch.delenv("DEMO_MANAGER_PASSWORD")
    for credential in demo_accounts_ensure(tmp_path):
        validate_password(credential.password, get_user_model().objects.get(username=credential.username))


def test_setup_demo_stops_with_a_message_on_a_weak_password(tmp_path, monkeypatch, settings):
    settings.STATE_DIR = tmp_path
    monkeypatch.setenv("DEMO_MANAGER_PASSWORD", "12345678")
    with pytest.raises(CommandError, match="DEMO_MANAGER_PASSWORD is refused: This password is too short"):
        call_command("setup_demo", stdout=io.StringIO())
    assert not get_user_model().objects.exists()


def test_a_token_from_the_endpoint_is_stored_hashed_and_expires_after_the_ttl(rita, settings):
    settings.API_TOKEN_TTL_HOURS = 48
    answer = APIClient().post(TOKEN_LOGIN, {"username": "rita", "password": PASSWORD}, format="json").json()
    (token,) = ApiToken.objects.filter(user=rita)
    assert token.key_hash == key_hash(answer["token"]) and answer["token"] not in repr(list(ApiToken.objects.values()))
    assert timedelta(hours=47, minutes=59) < token.expires_at - timezone.now() <= timedelta(hours=48)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {answer['token']}")
    assert api.get("/api/corpora/").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_an_expired_token_gets_401_saying_so(rita):
    created = api_token_create(user=rita)
    ApiToken.objects.filter(pk=created.token.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {created.key}")
    response = api.get("/api/corpora/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"
    assert f"Token {created.key[:8]}… expired at" in response.json()["detail"] and "POST /api/auth/token/" in response.json()["detail"]


def test_the_tokens_page_lists_mine_only_creates_one_shown_once_and_revokes(client, rita, sam):
    sams = api_token_create(user=sam, name="sam's script")
    client.force_login(rita)
    created = client.post("/accounts/tokens/new/", {"name": "nightly export"})
    assert created.status_code == 201
    (token,) = ApiToken.objects.filter(user=rita)
    html = created.content.decode()
    key = html.split('<pre class="token-key">')[1].split("</pre>")[0]
    assert key_hash(key) == token.key_hash and "nightly export" in html

    listing = client.get("/accounts/tokens/").content.decode()
    assert f"{token.key_prefix}…" in listing and key not in listing
    assert sams.token.key_prefix not in listing and "sam&#x27;s script" not in listing
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/corpora/").status_code == 200

    assert client.post(f"/accounts/tokens/{sams.token.pk}/revoke/").status_code == 302
    assert ApiToken.objects.filter(pk=sams.token.pk).exists()  # not hers: nothing happens
    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 302
    assert api.get("/api/corpora/").status_code == 401
    assert "API tokens" in client.get("/").content.decode()  # the account menu links the page


def test_the_api_lists_my_tokens_and_revokes_one_but_not_someone_elses(rita, sam):
    first, second, samb = api_token_create(user=rita, name="one"), api_token_create(user=rita, name="two"), api_token_create(user=sam)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {first.key}")
    rows = api.get("/api/auth/tokens/").json()["results"]
    assert {row["id"] for row in rows} == {first.token.pk, second.token.pk}
    assert {row["id"]: row["current"] for row in rows} == {first.token.pk: True, second.token.pk: False}
    assert all("key" not in row and "key_hash" not in row for row in rows)

    assert api.delete(f"/api/auth/tokens/{samb.token.pk}/").status_code == 404
    assert api.delete(f"/api/auth/tokens/{second.token.pk}/").status_code == 204
    assert set(ApiToken.objects.values_list("pk", flat=True)) == {first.token.pk, samb.token.pk}
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {second.key}")
    assert other.get("/api/corpora/").status_code == 401


def test_old_drf_tokens_are_migrated_hashed_and_keep_working(rita):
    """The migration's copy step against a table shaped like DRF's authtoken_token."""
    migration = importlib.import_module("webapp.migrations.0002_api_tokens")
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute('CREATE TABLE "authtoken_token" ("key" varchar(40) PRIMARY KEY, "user_id" integer, "created" timestamptz)')
        cursor.execute('INSERT INTO "authtoken_token" VALUES (%s, %s, now())', [old_key, rita.pk])
    migration.drf_tokens_copy(apps, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        cursor.execute('SELECT count(*) FROM "authtoken_token"')
        assert cursor.fetchone() == (0,)  # no plain-text key left
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {old_key}")
    assert api.get("/api/corpora/").status_code == 200
    assert ApiToken.objects.get(user=rita).expires_at is not None


@pytest.mark.parametrize(("proxies", "expected"), [(None, "10.0.0.1"), (1, "203.0.113.9"), (2, "6.6.6.6"), (5, "6.6.6.6")])
def test_the_locked_out_address_is_never_the_one_a_client_writes_in_the_header(settings, proxies, expected):
    """X-Forwarded-For: "<what the client sent>, <what our proxy saw>"; only our proxies' entries count."""
    settings.AXES_IPWARE_PROXY_COUNT = proxies
    request = RequestFactory().post(LOGIN, REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    assert client_address(request) == expected


def test_a_forged_forwarded_for_header_does_not_escape_the_lockout(client, rita):
    answers = [
        client.post(LOGIN, {"username": "rita", "password": "bad"}, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code for n in range(10)
    ]
    assert answers[-1] == 429
