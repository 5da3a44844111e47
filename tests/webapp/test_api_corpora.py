"""REST API: token and session login, corpora, documents and document pairs, for every persona."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from alignment.models import Corpus, Document
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments

LIST_ENDPOINTS = ["corpora/", "documents/", "pairs/", "alignment-runs/", "candidates/", "projects/"]


@pytest.mark.parametrize("path", LIST_ENDPOINTS)
def test_anonymous_requests_get_401(api_world, path):
    response = api_world.client(None).get(api_world.url(path))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_token_from_the_login_endpoint_authenticates(api_world):
    client = APIClient()
    response = client.post("/api/auth/token/", {"username": "anna", "password": "a-pass-123"}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    names = [row["name"] for row in results(client.get("/api/projects/"))]
    assert names == ["Trams project"]


def test_a_wrong_password_gets_no_token_and_says_so(api_world):
    response = APIClient().post("/api/auth/token/", {"username": "anna", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert "Unable to log in" in str(response.json()["non_field_errors"])


def test_a_bad_token_is_refused(api_world):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get("/api/corpora/").status_code == 401


def test_session_login_works_and_writes_need_csrf(api_world):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(api_world.users["owner"])
    assert [row["name"] for row in results(client.get("/api/corpora/"))] == ["Trams"]
    refused = client.post("/api/corpora/", {"name": "New", "language": "en"}, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    assert not Corpus.objects.filter(name="New").exists()


@pytest.mark.parametrize(("persona", "visible"), [("owner", True), ("staff", True), ("outsider", False), ("anna", False)])
def test_a_private_corpus_is_listed_only_for_its_owner_and_staff(api_world, persona, visible):
    client = api_world.client(persona)
    assert [row["id"] for row in results(client.get("/api/corpora/"))] == ([api_world.corpus.pk] if visible else [])
    assert client.get(api_world.url("corpora/{corpus}/")).status_code == (200 if visible else 404)
    assert client.get(api_world.url("pairs/{pair}/")).status_code == (200 if visible else 404)
    document = api_world.pair.simple_document_id
    assert client.get(f"/api/documents/{document}/").status_code == (200 if visible else 404)
    assert len(results(client.get("/api/documents/"))) == (2 if visible else 0)


def test_a_shared_corpus_is_visible_to_everyone_signed_in(api_world):
    Corpus.objects.filter(pk=api_world.corpus.pk).update(is_shared=True)
    row = api_world.client("outsider").get(api_world.url("corpora/{corpus}/")).json()
    assert row["name"] == "Trams" and row["owner"] == "owner" and row["document_count"] == 2 and row["pair_count"] == 1


def test_create_a_corpus_with_metadata(api_world):
    client = api_world.client("outsider")
    payload = {"name": "Fables", "language": "de", "level_order": ["a2", "b1"], "metadata": {"licence": "CC BY 4.0"}}
    response = client.post("/api/corpora/", payload, format="json")
    assert response.status_code == 201, response.content
    corpus = Corpus.objects.get(name="Fables")
    assert corpus.owner == api_world.users["outsider"] and corpus.metadata == {"licence": "CC BY 4.0"}
    assert response.json()["level_order"] == ["a2", "b1"] and response.json()["document_count"] == 0


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"name": "Trams", "language": "en"}, "name", "is not available"),  # the owner's private corpus: not confirmed
        ({"name": "X", "language": "English"}, "language", "not an ISO 639 code"),
        ({"name": "X", "language": "en", "pairing": "sometimes"}, "pairing", "not a valid choice"),
        ({"language": "en"}, "name", "required"),
        ({"name": "X", "language": "en", "metadata": [1]}, "metadata", "dictionary"),
    ],
)
def test_bad_corpus_input_names_the_field_and_stores_nothing(api_world, payload, field, message):
    before = Corpus.objects.count()
    response = api_world.client("outsider").post("/api/corpora/", payload, format="json")
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert Corpus.objects.count() == before


def test_corpus_list_filters_by_name_and_language(api_world):
    client = api_world.client("staff")
    client.post("/api/corpora/", {"name": "Fables", "language": "de"}, format="json")
    assert [row["name"] for row in results(client.get("/api/corpora/?language=de"))] == ["Fables"]
    assert [row["name"] for row in results(client.get("/api/corpora/?name=tram"))] == ["Trams"]
    assert [row["name"] for row in results(client.get("/api/corpora/?ordering=-name"))] == ["Trams", "Fables"]


def test_document_detail_has_paragraphs_and_sentences_in_order(api_world):
    document = api_world.pair.simple_document
    body = api_world.client("owner").get(f"/api/documents/{document.pk}/").json()
    assert body["level"] == "ele" and body["raw_text"] == document.raw_text
    assert [p["index"] for p in body["paragraphs"]] == [0, 1, 2]
    texts = [s["text"] for p in body["paragraphs"] for s in p["sentences"]]
    assert texts == [s.text for s in api_world.simple]
    first = body["paragraphs"][0]["sentences"][0]
    assert document.raw_text[first["char_start"] : first["char_end"]] == first["text"]


def test_documents_filter_by_corpus_and_level_and_list_without_text(api_world):
    client = api_world.client("owner")
    rows = results(client.get(api_world.url("documents/?corpus={corpus}&level=adv")))
    assert [row["external_id"] for row in rows] == ["Tram"] and "raw_text" not in rows[0]
    assert results(client.get("/api/documents/?level=nope")) == []
    assert client.get("/api/documents/?corpus=1.5").status_code == 400


def test_pairs_list_shows_both_documents_and_filters(api_world):
    client = api_world.client("owner")
    rows = results(client.get(api_world.url("pairs/?corpus={corpus}")))
    assert len(rows) == 1
    assert rows[0]["complex_document"]["level"] == "adv" and rows[0]["simple_document"]["level"] == "ele"
    document = Document.objects.get(corpus=api_world.corpus, level="adv")
    assert len(results(client.get(f"/api/pairs/?document={document.pk}"))) == 1
    assert results(client.get("/api/pairs/?origin=mined")) == []


def test_lists_are_paginated(api_world):
    client = api_world.client("owner")
    first = client.get("/api/documents/?page_size=1").json()
    assert first["count"] == 2 and len(first["results"]) == 1 and first["next"] and first["previous"] is None
    second = client.get(first["next"]).json()
    assert {first["results"][0]["id"], second["results"][0]["id"]} == set(Document.objects.values_list("pk", flat=True))
    assert client.get("/api/documents/?page=9").status_code == 404
