"""Junk input to the API and the mined-pair browser gives a 400 (or an empty page) with a message, never a 500."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import AnnotationProject, ItemEvent
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


# --- a body over its bound ------------------------------------------------------------------------
# Django held a form or JSON body to DATA_UPLOAD_MAX_MEMORY_SIZE only as a view read it (a bare 400, a traceback in the
# log), and a multipart body's files not at all: a file posted to any page streamed to the disk, however large.


def test_a_json_body_over_the_bound_is_a_413_naming_it_and_nothing_is_stored(api_world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    projects = AnnotationProject.objects.count()
    body = f'{{"name": "Big", "corpus": {api_world.corpus.pk}, "guidelines": "{"x" * 3_000}"}}'
    response = _post_raw(api_world, body)
    assert response.status_code == 413, response.content
    detail = response.json()["detail"]
    assert f"the request's body is {len(body):,} bytes, over the limit of 2,000 bytes" in detail
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in detail and "nothing was read or stored" in detail
    assert AnnotationProject.objects.count() == projects
    assert _post_raw(api_world, body.replace("x" * 3_000, "short")).status_code == 201  # the same within the bound is stored


def test_a_file_posted_to_a_page_over_the_bound_is_refused_unread(client, api_world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    client.force_login(api_world.users["anna"])
    url = reverse("annotation:item_event_save", args=[api_world.project.pk, api_world.pair.pk])
    form = lambda: {"kind": "comment", "text": "hi", "junk": SimpleUploadedFile("junk.bin", b"y" * 50_000)}  # noqa: E731
    response = client.post(url, form(), HTTP_ACCEPT="application/json")
    assert response.status_code == 413 and "over the limit of 2,000 bytes" in response.json()["error"]
    assert "_files" not in response.wsgi_request.__dict__, "the multipart body was never parsed"
    assert not ItemEvent.objects.exists()
    page = client.post(url, form())  # a browser's form: the site's error page
    assert page.status_code == 413 and b"The request is too large" in page.content and b"Error 413" in page.content


def _import_form(text: str) -> dict:
    return {"corpus_name": "Big", "language": "en", "format": "text", "paragraph_mode": "blank", "pairing": "all",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$",
            "files": [SimpleUploadedFile("Tram-adv.txt", text.encode()), SimpleUploadedFile("Tram-ele.txt", text.encode())]}  # fmt: skip


@pytest.mark.parametrize("view", ["alignment:corpus_import_preview", "api:import-list"])
def test_the_imports_take_bodies_past_that_bound_up_to_their_own(client, owner, settings, view):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    client.force_login(owner)
    text = "A tram runs here. " * 300  # two files of 5,400 bytes: past the request bound, within the import's
    response = client.post(reverse(view), _import_form(text))
    assert response.status_code in (200, 202), response.content[:500]
    settings.IMPORT_MAX_REQUEST_BYTES = 5_000
    refused = client.post(reverse(view), _import_form(text))
    assert refused.status_code == 413 and "over the limit of 5,000 bytes for one import" in refused.content.decode()
