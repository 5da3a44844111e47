"""The Import page's Preview: the first document as the import would read it, with its layout; nothing stored."""

from __future__ import annotations

import re

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from alignment.importing.models import ImportJob
from alignment.importing.preview import PREVIEW_PARAGRAPHS, PREVIEW_SPLIT_CHARS, import_preview
from alignment.importing.readers import ImportOptions
from alignment.models import Corpus
from tests.alignment.test_import_layout import ONE_PER_LINE
from tests.conftest import SAMPLE_ADV
from tests.webapp.access_world import database_fingerprint

PREVIEW = reverse("alignment:corpus_import_preview")
HTMX = {"HTTP_HX_REQUEST": "true"}


def _form(files: list[SimpleUploadedFile], **fields) -> dict:
    return {"corpus_name": "", "language": "en", "format": "text", "paragraph_mode": "auto",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$", "pairing": "all", "files": files, **fields}  # fmt: skip


def _text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_a_preview_of_a_line_per_paragraph_file_hints_at_the_layout_when_blank_lines_were_chosen(client, owner):
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode())], paragraph_mode="blank"), **HTMX)
    page = _text(response)
    assert response.status_code == 200 and "<html" not in page  # the panel only: htmx swaps it in
    assert "This file looks like “each line is a paragraph”, not “a blank line separates paragraphs” as chosen.</strong>" in page
    assert "Why: 5 non-empty lines, no blank lines; 4 of 4 single line breaks follow a sentence end or a heading" in page
    assert "With your choice it is read as 1 paragraph (below)." in page
    assert 'name="paragraph_mode" value="line"' in page and "Use “each line is a paragraph”" in page
    assert "<strong>1</strong> paragraph, <strong>5</strong> sentences" in page  # the heading glued to the first sentence
    assert "<span>Intermediate The city council approved" in page
    # the paragraph mode field comes along, out of band, so the form keeps what the preview used
    assert 'id="field-paragraph_mode" hx-swap-oob="true"' in page


def test_after_switching_the_preview_shows_each_line_as_a_paragraph_with_numbered_sentences(client, owner):
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode())], paragraph_mode="line"), **HTMX)
    page = _text(response)
    assert "This matches your choice." in page and "looks like" not in page
    assert "<strong>5</strong> paragraphs, <strong>6</strong> sentences" in page
    sentences = re.findall(r'<span class="sent-no">(\d+)</span><span>([^<]+)</span>', page)
    assert [number for number, _ in sentences] == [str(n) for n in range(1, 7)]
    assert sentences[1] == ("2", "The city council approved a new tram line on Tuesday.")
    assert '<option value="line" selected>' in page  # the field swapped out of band holds the mode used


def test_in_auto_mode_the_preview_says_which_mode_the_import_will_use(client, owner):
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode())]), **HTMX)
    page = _text(response)
    assert "The import reads this file as “each line is a paragraph” (detected in each file)." in page
    assert "<strong>5</strong> paragraphs" in page and "Use “" not in page


def test_the_import_page_offers_detection_as_the_default_paragraph_mode(client, owner):
    client.force_login(owner)
    page = _text(client.get(reverse("alignment:corpus_import")))
    assert '<option value="auto" selected>detect it in each file</option>' in page
    assert f'formaction="{PREVIEW}" hx-post="{PREVIEW}"' in page


def test_a_preview_stores_nothing(client, owner, tram_corpus):
    client.force_login(owner)
    before = database_fingerprint()
    files = [SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode()), SimpleUploadedFile("New-ele.txt", SAMPLE_ADV.encode())]
    response = client.post(PREVIEW, _form(files, corpus_name="A new corpus"), **HTMX)
    assert response.status_code == 200 and "Preview: Tram" in _text(response)
    assert database_fingerprint() == before
    assert not Corpus.objects.filter(name="A new corpus").exists() and not ImportJob.objects.exists()


def test_bad_files_are_listed_with_file_and_line_and_the_first_readable_document_is_shown(client, owner):
    client.force_login(owner)
    files = [
        SimpleUploadedFile("Broken-adv.txt", b"\xff\xfe\x00\x00garbage"),
        SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode()),
    ]
    page = _text(client.post(PREVIEW, _form(files), **HTMX))
    assert "1 file would not be imported" in page and "Broken-adv.txt, line 1:" in page
    assert "Preview: Tram" in page and "The first document, from Tram-adv.txt (2 files, 1 document readable)" in page


def test_a_bad_csv_line_is_reported_with_file_and_line(client, owner):
    client.force_login(owner)
    csv = b'id,adv,ele\nTram,"A long sentence here.","Short one."\nBus,"only two fields"\n'
    page = _text(client.post(PREVIEW, _form([SimpleUploadedFile("trams.csv", csv)], format="csv"), **HTMX))
    assert "trams.csv, line 3: row has 2 fields but the header has 3" in page
    assert "No file can be read: nothing would be imported." in page


def test_a_preview_needs_files_and_says_so_in_the_panel(client, owner):
    client.force_login(owner)
    page = _text(client.post(PREVIEW, _form([]), **HTMX))
    assert "Preview needs the form fixed first:" in page and "Files: This field is required." in page


def test_an_upload_over_the_file_limit_is_refused_with_413_like_the_import(client, owner, settings):
    settings.IMPORT_MAX_FILE_BYTES = 100_000
    client.force_login(owner)
    files = [SimpleUploadedFile("Huge-adv.txt", b"Words here. " * 200_000)]
    before = database_fingerprint()
    response = client.post(PREVIEW, _form(files), **HTMX)
    assert response.status_code == 413
    assert "Huge-adv.txt: the file is over the limit of 100,000 bytes; nothing was imported" in _text(response)
    limit = response.wsgi_request.upload_handlers[0]
    assert limit.received_bytes <= 100_000 + limit.chunk_size  # stopped while streaming, not after 2.4 MB
    assert database_fingerprint() == before


def test_an_upload_announcing_too_many_bytes_is_refused_before_reading_the_body(client, owner, settings):
    settings.IMPORT_MAX_REQUEST_BYTES = 1_000
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode() * 5)]), **HTMX)
    assert response.status_code == 413 and "over the limit of 1,000 bytes for one import" in _text(response)
    assert "_files" not in response.wsgi_request.__dict__


def test_without_htmx_the_preview_is_the_whole_import_page_with_the_form_kept(client, owner):
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode())], corpus_name="Kept name"))
    page = _text(response)
    assert response.status_code == 200 and "<h1>Import documents</h1>" in page and "Preview: Tram" in page
    assert 'value="Kept name"' in page and 'action="/corpora/import/"' in page
    assert "hx-swap-oob" not in page  # the field is in the form already


def test_the_preview_checks_the_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post(PREVIEW, _form([SimpleUploadedFile("Tram-adv.txt", ONE_PER_LINE.encode())]))
    assert response.status_code == 403


def test_the_preview_only_answers_posts(client, owner):
    client.force_login(owner)
    assert client.get(PREVIEW).status_code == 405


def test_only_the_first_paragraphs_are_shown_and_a_long_document_is_split_only_in_part():
    paragraph = "A sentence about trams. " * 400  # 9,600 characters
    text = "\n".join([paragraph.strip()] * 20)  # 192,000 characters, one paragraph per line
    preview = import_preview(files=[("Long-adv.txt", text.encode())], options=ImportOptions(paragraph_mode="line", max_file_bytes=10**6))
    document = preview.document
    assert document.paragraph_count == 20 and len(document.paragraphs) == PREVIEW_PARAGRAPHS
    # 8,000 sentences in all; about PREVIEW_SPLIT_CHARS / 24 of them were split and counted
    assert not document.counts_complete and abs(document.sentence_count - PREVIEW_SPLIT_CHARS / 24) < 10
    assert document.paragraphs_not_shown == 15


def test_a_first_document_without_sentences_is_an_error_and_the_next_file_is_shown():
    files = [("Dots-adv.txt", b"...\n!!!\n"), ("Tram-adv.txt", ONE_PER_LINE.encode())]
    preview = import_preview(files=files, options=ImportOptions(paragraph_mode="line"))
    assert preview.errors == ["Dots-adv.txt, line 1: document 'Dots' (adv) has no sentences"]
    assert preview.document.file == "Tram-adv.txt"


def test_an_import_without_files_is_a_form_error_and_stages_nothing(client, owner):
    client.force_login(owner)
    response = client.post(reverse("alignment:corpus_import"), _form([], corpus_name="Empty"))
    assert response.status_code == 200 and response.context["form"].errors["files"] == ["This field is required."]
    assert not ImportJob.objects.exists()
