"""GET /accounts/session/: whether this browser is signed in, as whom, and a CSRF token; what a page asks after a lost session."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

PROBE = "/accounts/session/"


def test_the_probe_has_its_address():
    assert reverse("accounts:session") == PROBE


def test_signed_out_it_says_so_and_gives_a_token_never_cached(client, db):
    answer = client.get(PROBE)
    assert answer.status_code == 200
    assert answer.json() == {"authenticated": False, "user_id": None, "username": "", "csrf_token": answer.json()["csrf_token"]}
    assert len(answer.json()["csrf_token"]) >= 32 and "csrftoken" in answer.cookies  # the login form needs the cookie too
    assert "no-store" in answer["Cache-Control"] and "private" in answer["Cache-Control"]


def test_signed_in_it_says_who_and_nothing_more(client, owner):
    client.force_login(owner)
    answer = client.get(PROBE)
    assert answer.status_code == 200
    assert set(answer.json()) == {"authenticated", "user_id", "username", "csrf_token"}
    assert (answer.json()["authenticated"], answer.json()["user_id"], answer.json()["username"]) == (True, owner.pk, "owner")


@pytest.mark.parametrize("verb", ["post", "put", "delete"])
def test_it_only_answers_get(client, owner, verb):
    client.force_login(owner)
    assert getattr(Client(), verb)(PROBE).status_code == 405
    assert getattr(client, verb)(PROBE).status_code == 405


def test_its_token_passes_the_csrf_check(owner):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    token = browser.get(PROBE).json()["csrf_token"]
    assert browser.post(reverse("accounts:api_token_create"), {"name": "probe"}, headers={"x-csrftoken": token}).status_code == 201
    refused = browser.post(reverse("accounts:api_token_create"), {"name": "probe"}, headers={"accept": "application/json"})
    assert refused.status_code == 403 and refused.json()["reason"] == "csrf"  # no token: the JSON a page's script can tell apart
