"""The one upload guard of the Import page, its preview and the API; and where the page shows a refused corpus."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory
from django.urls import reverse

from alignment import services
from alignment.importing.models import ImportJob
from alignment.importing.uploads import import_upload_guard
from tests.conftest import SAMPLE_ADV

PATTERN = r"^(?P<id>.+)-(?P<level>[^-]+)$"


def _upload(size: int):
    return RequestFactory().post("/corpora/import/", {"corpus_name": "Uploaded", "files": [SimpleUploadedFile("A-adv.txt", b"x" * size)]})


def test_an_announced_oversize_body_is_never_read_whoever_asks_for_it_later(settings):
    settings.IMPORT_MAX_REQUEST_BYTES = 1_000
    request = _upload(5_000)
    limit = import_upload_guard(request)
    assert limit.refusal.startswith("the upload is ") and "over the limit of 1,000 bytes for one import" in limit.refusal
    # A later reader (a CSRF check, DRF's lazy parser, a template) gets an empty form, and the stream stays unread.
    assert not request.POST and not request.FILES
    assert not request._read_started


def test_a_body_within_the_limits_parses_through_the_limit(settings):
    settings.IMPORT_MAX_FILE_BYTES = 10_000
    request = _upload(5_000)
    limit = import_upload_guard(request)
    assert request.FILES["files"].size == 5_000 and request.POST["corpus_name"] == "Uploaded"
    assert limit.refusal is None and limit.received_bytes == 5_000 and request.upload_handlers[0] is limit


def test_a_file_over_its_limit_stops_the_parse(settings):
    settings.IMPORT_MAX_FILE_BYTES = 1_000
    request = _upload(500_000)
    limit = import_upload_guard(request)
    assert not request.FILES
    assert limit.refusal == "A-adv.txt: the file is over the limit of 1,000 bytes; nothing was imported"
    assert limit.received_bytes <= 1_000 + limit.chunk_size


def _import_form(corpus: str, language: str = "en") -> dict:
    return {"corpus_name": corpus, "language": language, "format": "text", "paragraph_mode": "blank", "filename_pattern": PATTERN,
            "pairing": "all", "files": [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode())]}  # fmt: skip


@pytest.mark.django_db
def test_the_page_shows_someone_elses_corpus_on_the_corpus_name_field(client, owner, outsider):
    services.corpus_get_or_create(name="Theirs", language="en", owner=outsider)
    client.force_login(owner)
    response = client.post(reverse("alignment:corpus_import"), _import_form("Theirs"))
    form = response.context["form"]
    assert form.errors == {"corpus_name": ["the name 'Theirs' is not available; choose another name"]}
    assert not ImportJob.objects.exists()


@pytest.mark.django_db
def test_the_page_shows_a_corpus_in_another_language_on_the_language_field(client, owner):
    services.corpus_get_or_create(name="Mine", language="de", owner=owner)
    client.force_login(owner)
    response = client.post(reverse("alignment:corpus_import"), _import_form("Mine"))
    assert response.context["form"].errors == {"language": ["corpus 'Mine' is in 'de', not 'en'"]}
    assert not ImportJob.objects.exists()
