"""REST API: importing files (multipart) the Import page's way, and watching the import job.

The upload goes through the page's guard, form and service: the same limits, the same refusals,
the same staged job that a real worker imports.
"""

from __future__ import annotations

import html
import re

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from alignment import services
from alignment.importing.models import ImportJob, ImportJobFile
from alignment.models import AlignmentRun, Corpus, Document, EmbeddingRun
from tests.alignment.conftest import run_worker  # noqa: F401 - pytest fixture used as an argument
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from tests.webapp.api_support import fast_password_hashing, results  # noqa: F401 - pytest fixture used by every test
from webapp.accounts.services import api_token_create

IMPORTS = "/api/imports/"
PATTERN = r"^(?P<id>.+)-(?P<level>[^-]+)$"


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user).key}")
    return client


def _tram_files() -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode()), SimpleUploadedFile("Tram-ele.txt", SAMPLE_ELE.encode())]


def _post(client: APIClient, files: list[SimpleUploadedFile] | None, **fields):
    body = {"corpus_name": "Uploaded", "paragraph_mode": "blank", **fields}
    if files is not None:
        body["files"] = files
    return client.post(IMPORTS, body, format="multipart")


def _nothing_stored() -> bool:
    return not ImportJob.objects.exists() and not ImportJobFile.objects.exists() and not Document.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_any_user_imports_into_a_new_corpus_and_a_worker_imports_and_queues(outsider, run_worker):
    client = _client(outsider)  # no corpus, no role anywhere: a new corpus is theirs
    response = _post(client, _tram_files(), language="en", format="text", filename_pattern=PATTERN)
    assert response.status_code == 202, response.content
    body = response.json()
    job = ImportJob.objects.get()
    assert body["id"] == job.pk and body["status"] == "queued" and body["files_total"] == 2 and body["files_done"] == 0
    assert body["corpus_name"] == "Uploaded" and body["corpus"] is None and body["created_by"] == "outsider"
    assert body["url"].endswith(f"{IMPORTS}{job.pk}/") and response["Location"] == body["url"]
    assert job.options["paragraph_mode"] == "blank" and job.options["max_file_bytes"] == django_settings.IMPORT_MAX_FILE_BYTES
    assert not Document.objects.exists()  # nothing imported in the request

    run_worker(["imports", "alignment"])

    done = client.get(f"{IMPORTS}{job.pk}/").json()
    corpus = Corpus.objects.get(name="Uploaded")
    assert done["status"] == "succeeded" and done["error"] == "" and done["percent"] == 100, done
    assert done["corpus"] == corpus.pk and corpus.owner == outsider and done["corpus_created"] and done["pairs_created"] == 1
    assert [(r["file"], r["documents_created"], r["error"]) for r in done["results"]] == [
        ("Tram-adv.txt", 1, None), ("Tram-ele.txt", 1, None),
    ]  # fmt: skip
    assert Document.objects.filter(corpus=corpus).count() == 2
    assert done["embedding_run"] == EmbeddingRun.objects.get(corpus=corpus).pk
    assert done["alignment_run"] == AlignmentRun.objects.get(corpus=corpus).pk


@pytest.mark.django_db(transaction=True)
def test_an_undecodable_file_is_reported_by_the_job_and_no_corpus_is_left(owner, run_worker):
    client = _client(owner)
    response = _post(client, [SimpleUploadedFile("Broken-adv.txt", b"\xff\xfe\x00\x00garbage")], corpus_name="Never")
    assert response.status_code == 202, response.content
    run_worker(["imports", "alignment"])
    done = client.get(response.json()["url"]).json()
    assert done["status"] == "failed" and done["error"] == "no file was imported: 1 of 1 had errors (see the report)"
    [result] = done["results"]
    assert result["file"] == "Broken-adv.txt" and result["error"] and result["documents_created"] == 0
    assert done["corpus"] is None and done["corpus_removed"] and not Corpus.objects.filter(name="Never").exists()


@pytest.mark.django_db
def test_anonymous_callers_can_neither_import_nor_list(owner):
    client = APIClient()
    assert _post(client, _tram_files()).status_code in (401, 403)
    assert client.get(IMPORTS).status_code in (401, 403)
    assert _nothing_stored()


@pytest.mark.django_db
def test_someone_elses_corpus_is_refused_on_corpus_name_and_nothing_is_stored(owner, outsider):
    services.corpus_get_or_create(name="Theirs", language="en", owner=owner)
    response = _post(_client(outsider), _tram_files(), corpus_name="Theirs")
    assert response.status_code == 400
    assert response.json() == {"corpus_name": ["the name 'Theirs' is not available; choose another name"]}
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_corpus_in_another_language_is_refused_on_language(owner):
    services.corpus_get_or_create(name="Mine", language="de", owner=owner)
    response = _post(_client(owner), _tram_files(), corpus_name="Mine", language="en")
    assert response.status_code == 400 and response.json() == {"language": ["corpus 'Mine' is in 'de', not 'en'"]}
    assert _nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({}, "files", "This field is required."),
        ({"language": "english"}, "language", "not an ISO 639 code"),
        ({"format": "docx"}, "format", "Select a valid choice"),
        ({"filename_pattern": "(?P<id>"}, "filename_pattern", "not a valid"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(owner, fields, field, message):
    files = None if field == "files" else _tram_files()
    response = _post(_client(owner), files, **fields)
    assert response.status_code == 400 and field in response.json(), response.content
    assert message in response.json()[field][0]
    assert _nothing_stored() and not Corpus.objects.filter(name="Uploaded").exists()


@pytest.mark.django_db
def test_a_json_body_is_refused_as_unsupported(owner):
    response = _client(owner).post(IMPORTS, {"corpus_name": "Uploaded"}, format="json")
    assert response.status_code == 415 and "application/json" in response.json()["detail"]
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_file_over_the_limit_is_413_after_reading_at_most_one_chunk_past_it(owner, settings):
    settings.IMPORT_MAX_FILE_BYTES = 100_000
    files = [SimpleUploadedFile("Small-adv.txt", SAMPLE_ADV.encode()), SimpleUploadedFile("Huge-adv.txt", b"Words here. " * 200_000)]
    response = _post(_client(owner), files)
    assert response.status_code == 413
    assert response.json() == {"detail": "Huge-adv.txt: the file is over the limit of 100,000 bytes; nothing was imported"}
    limit = response.wsgi_request.upload_handlers[0]
    assert limit.received_bytes <= len(SAMPLE_ADV) + 100_000 + limit.chunk_size  # not the 2.4 MB sent
    assert _nothing_stored()


@pytest.mark.django_db
def test_more_files_than_the_limit_is_413_naming_it(owner, settings):
    settings.IMPORT_MAX_FILES = 2
    response = _post(_client(owner), [SimpleUploadedFile(f"Story{k}-adv.txt", SAMPLE_ADV.encode()) for k in range(3)])
    assert response.status_code == 413
    assert response.json()["detail"].startswith("the upload has more than 2 files, the limit for one import; nothing was imported")
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_request_announcing_too_many_bytes_is_413_before_its_body_is_read(owner, settings):
    settings.IMPORT_MAX_REQUEST_BYTES = 1_000
    response = _post(_client(owner), [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode() * 5)])
    assert response.status_code == 413
    assert "over the limit of 1,000 bytes for one import; nothing was imported" in response.json()["detail"]
    assert "_files" not in response.wsgi_request.__dict__  # the multipart body was never parsed
    assert _nothing_stored()


@pytest.mark.django_db
def test_the_limit_holds_when_the_session_logins_csrf_check_is_first_to_read_the_body(owner, settings):
    """A browser session's CSRF check reads ``request.POST``: the limit is installed before it runs."""
    settings.IMPORT_MAX_FILE_BYTES = 100_000
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)
    token = "a" * 32
    client.cookies[django_settings.CSRF_COOKIE_NAME] = token
    files = [SimpleUploadedFile("Huge-adv.txt", b"Words here. " * 200_000)]
    response = client.post(IMPORTS, {"corpus_name": "Uploaded", "files": files}, format="multipart", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 413 and "Huge-adv.txt: the file is over the limit" in response.json()["detail"]
    limit = response.wsgi_request.upload_handlers[0]
    assert limit.received_bytes <= 100_000 + limit.chunk_size
    assert _nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("limit_name", ["IMPORT_MAX_REQUEST_BYTES", "IMPORT_MAX_FILE_BYTES"])
def test_the_page_and_the_api_refuse_the_same_oversize_upload_with_the_same_message(client, owner, settings, limit_name):
    setattr(settings, limit_name, 1_000)
    page = client
    page.force_login(owner)
    form = {"corpus_name": "Uploaded", "language": "en", "format": "text", "paragraph_mode": "blank",
            "filename_pattern": PATTERN, "pairing": "all"}  # fmt: skip
    from_page = page.post(
        reverse("alignment:corpus_import"), {**form, "files": [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode() * 5)]}
    )
    from_api = _post(_client(owner), [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode() * 5)])
    assert from_page.status_code == from_api.status_code == 413
    message = from_api.json()["detail"]
    assert "over the limit of 1,000 bytes" in message
    announced = re.compile(r"the upload is [\d,]+ bytes")  # the page's body is larger: it has more fields
    assert announced.sub("", message) in announced.sub("", html.unescape(from_page.content.decode()))
    assert _nothing_stored()


@pytest.mark.django_db
def test_users_list_their_own_jobs_and_staff_list_all(owner, outsider, staff):
    mine = ImportJob.objects.create(created_by=owner, corpus_name="Mine", language="en", pairing="all", options={})
    theirs = ImportJob.objects.create(created_by=outsider, corpus_name="Theirs", language="en", pairing="all", options={})
    assert [row["id"] for row in results(_client(owner).get(IMPORTS))] == [mine.pk]
    assert [row["id"] for row in results(_client(outsider).get(IMPORTS))] == [theirs.pk]
    assert [row["id"] for row in results(_client(staff).get(IMPORTS))] == [theirs.pk, mine.pk]  # newest first


@pytest.mark.django_db
def test_another_users_job_is_404_and_staff_see_it(owner, outsider, staff):
    job = ImportJob.objects.create(created_by=owner, corpus_name="Mine", language="en", pairing="all", options={})
    url = f"{IMPORTS}{job.pk}/"
    assert _client(outsider).get(url).status_code == 404
    assert _client(owner).get(url).json()["corpus_name"] == "Mine"
    assert _client(staff).get(url).json()["id"] == job.pk


def test_the_schema_describes_the_multipart_body_and_the_413(client):
    operation = client.get("/api/schema/?format=json").json()["paths"]["/api/imports/"]["post"]
    body = operation["requestBody"]["content"]
    assert list(body) == ["multipart/form-data"] and operation["requestBody"]["required"] is True
    assert operation["responses"].keys() >= {"202", "400", "413"}


def test_an_import_is_cancelled_through_the_api_by_its_importer_only(owner, outsider):
    answer = _post(_client(owner), _tram_files())
    job = answer.json()
    assert answer.status_code == 202 and job["cancel_requested"] is False
    assert _client(outsider).post(f"{IMPORTS}{job['id']}/cancel/").status_code == 404
    cancelled = _client(owner).post(f"{IMPORTS}{job['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert not ImportJobFile.objects.exists() and ImportJob.objects.get(pk=job["id"]).status == "cancelled"
