"""Junk input to the API and the mined-pair browser gives a 400 (or an empty page) with a message, never a 500."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import AnnotationProject
from tests.webapp.api_support import api_world, fast_password_hashing  # noqa: F401 - pytest fixtures used as arguments

DEEP = "[" * 100_000 + "]" * 100_000


def _owner_client(api_world) -> APIClient:
    client = APIClient()
    client.force_authenticate(api_world.users["owner"])
    return client


def _post_raw(api_world, body: str):
    return _owner_client(api_world).generic(
        "POST", "/api/projects/", body.encode("utf-8", "surrogatepass"), content_type="application/json"
    )


def test_deeply_nested_json_body_is_a_400_naming_the_nesting(api_world):
    response = _post_raw(api_world, '{"name": ' + DEEP + "}")
    assert response.status_code == 400
    assert "nested more than 32 levels" in response.json()["detail"]


def test_json_nested_below_the_parser_limit_but_past_ours_is_refused(api_world):
    response = _post_raw(api_world, '{"name": "x", "pairs": ' + "[" * 200 + "]" * 200 + "}")
    assert response.status_code == 400 and "nested more than 32 levels" in response.json()["detail"]


@pytest.mark.parametrize(("escaped", "message"), [("\\ud800", "lone surrogate \\ud800"), ("a\\u0000b", "NUL character")])
def test_unstorable_strings_in_a_json_body_are_a_400_naming_the_field(api_world, escaped, message):
    response = _post_raw(api_world, '{"name": "Odd ' + escaped + f'", "corpus": {api_world.corpus.pk}, "guidelines": "ok"}}')
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert message in detail and "name" in detail
    assert AnnotationProject.objects.count() == 1


@pytest.mark.parametrize(
    "query",
    [
        {"name": "a\x00b"},
        {"language": "\x00"},
        {"page": "abc"},
        {"page": "9" * 30},
        {"page_size": "9" * 30},
        {"page_size": "-5"},
        {"ordering": "\x00"},
    ],
)
def test_junk_query_parameters_on_a_list_are_not_a_500(api_world, query):
    response = _owner_client(api_world).get("/api/corpora/", query)
    assert response.status_code in (200, 400, 404), response.content


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("documents/", {"corpus": "abc"}),
        ("documents/", {"corpus": "9" * 30}),
        ("documents/", {"external_id": "a\x00"}),
        ("pairs/", {"document": "1.5"}),
        ("pairs/", {"document": "9" * 30}),
        ("alignment-runs/", {"pair": "x"}),
        ("candidates/", {"run": "9" * 30}),
    ],
)
def test_junk_ids_and_text_in_filters_are_a_400_or_an_empty_list(api_world, path, query):
    response = _owner_client(api_world).get(f"/api/{path}", query)
    assert response.status_code in (200, 400), response.content
    if response.status_code == 200:
        assert response.json()["count"] == 0


@pytest.fixture
def empty_mining_job(tram_corpus):
    from django.conf import settings

    from alignment import services
    from alignment.mining import service as mining

    services.encoder_get_or_create(name=settings.ENCODER_MODEL, dimensions=384)
    job, _ = mining.mining_job_create(source_corpus=tram_corpus, target_corpus=tram_corpus, config={})
    return job


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"q": "tram\x00line"}, "q: contains a NUL character"),  # refused before any view (webapp/lib/input_guard.py)
        ({"q": "x" * 201}, "limit is 200"),
        ({"score_min": "nan"}, "not a finite number"),
        ({"length_ratio_max": "inf"}, "not a finite number"),
        ({"char_ratio_min": "NaN"}, "not a finite number"),
        ({"shape": "<b>1:1</b>"}, "shape"),
    ],
)
def test_junk_in_the_mined_pair_search_is_the_sites_400_page_naming_the_field(client, owner, empty_mining_job, query, message):
    client.force_login(owner)
    response = client.get(f"/mining/{empty_mining_job.pk}/", query)
    page = response.content.decode()
    assert response.status_code == 400 and message in page
    assert response["Content-Type"].startswith("text/html") and "Go to the start page" in page  # the site's error page
    assert "<b>1:1</b>" not in page  # the message quotes the input, escaped


def test_a_huge_page_number_in_the_mined_pair_browser_shows_the_last_page(client, owner, empty_mining_job):
    client.force_login(owner)
    assert client.get(f"/mining/{empty_mining_job.pk}/", {"page": "9" * 40}).status_code == 200
