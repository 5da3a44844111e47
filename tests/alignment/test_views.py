"""Pages: login requirement, who may see what, and the import / job controls."""

from __future__ import annotations

import pytest
from django.urls import reverse
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment import services
from alignment.importing.models import ImportJob
from alignment.models import Corpus, Document, DocumentPair, EmbeddingRun
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE


@pytest.mark.parametrize(
    "url",
    ["/", "/corpora/import/", "/corpora/1/", "/pairs/1/", "/admin/"],
)
def test_anonymous_user_is_redirected_to_login(client, db, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("login")) or response.url.startswith("/admin/login/")


def test_login_page_is_public(client, db):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Log in" in response.content


def test_owner_sees_corpus_with_counts(client, owner, tram_corpus):
    client.force_login(owner)
    response = client.get(reverse("alignment:corpus_list"))
    assert response.status_code == 200
    corpus = response.context["corpora"].get()
    assert (corpus.document_count, corpus.pair_count) == (2, 1)
    # Each count is its own subquery: a GROUP BY over the documents and the pairs joined at once made documents x pairs
    # rows per corpus (200 M at 10,000 pairs, sorted on disk until the disk was full).
    assert "GROUP BY" not in str(response.context["corpora"].query)


def test_outsider_cannot_see_private_corpus_or_its_pairs(client, outsider, tram_corpus):
    client.force_login(outsider)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    assert list(client.get(reverse("alignment:corpus_list")).context["corpora"]) == []
    assert client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).status_code == 404
    assert client.get(reverse("alignment:pair_detail", args=[pair.pk])).status_code == 404
    assert client.post(reverse("alignment:corpus_embed", args=[tram_corpus.pk])).status_code == 404
    assert not EmbeddingRun.objects.exists()


def test_shared_corpus_is_visible_to_other_users(client, outsider, tram_corpus):
    Corpus.objects.filter(pk=tram_corpus.pk).update(is_shared=True)
    client.force_login(outsider)
    assert client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).status_code == 200


def test_staff_sees_every_corpus(client, staff, tram_corpus):
    client.force_login(staff)
    assert client.get(reverse("alignment:corpus_detail", args=[tram_corpus.pk])).status_code == 200


def test_pair_page_shows_both_documents_with_numbered_sentences_per_paragraph(client, owner, tram_corpus):
    client.force_login(owner)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    response = client.get(reverse("alignment:pair_detail", args=[pair.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert [len(sentences) for _, sentences in response.context["complex_paragraphs"]] == [2, 2, 1]
    assert [len(sentences) for _, sentences in response.context["simple_paragraphs"]] == [2, 2, 1]
    assert "The council approved" not in html  # text is shown as imported, not paraphrased
    assert "The city council approved a new tram line on Tuesday." in html
    assert "Some people think it costs too much." in html
    assert 'id="cs4"' in html and 'id="sp2"' in html


def test_upload_form_stages_the_files_and_redirects_to_the_import_job(client, owner):
    client.force_login(owner)
    from django.core.files.uploadedfile import SimpleUploadedFile

    files = [
        SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode()),
        SimpleUploadedFile("Tram-ele.txt", SAMPLE_ELE.encode()),
        SimpleUploadedFile("Broken-adv.txt", b"\xff\xfe\x00\x00garbage"),
    ]
    response = client.post(
        reverse("alignment:corpus_import"),
        {
            "corpus_name": "Uploaded",
            "language": "en",
            "format": "text",
            "paragraph_mode": "blank",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$",
            "pairing": "all",
            "files": files,
        },
    )
    # The request only stages the upload and queues the job (tests/alignment/test_import_job.py runs it on a worker).
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("alignment:import_job", args=[job.pk])
    assert job.created_by == owner and job.corpus_name == "Uploaded" and job.files_total == 3
    assert [f.name for f in job.staged_files.all()] == ["Tram-adv.txt", "Tram-ele.txt", "Broken-adv.txt"]
    assert not Document.objects.exists()


def test_upload_into_someone_elses_corpus_is_refused(client, outsider, tram_corpus):
    client.force_login(outsider)
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        reverse("alignment:corpus_import"),
        {
            "corpus_name": tram_corpus.name,
            "language": "en",
            "format": "text",
            "paragraph_mode": "blank",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$",
            "pairing": "all",
            "files": [SimpleUploadedFile("New-adv.txt", b"A new sentence here.")],
        },
    )
    assert "is not available" in response.content.decode()  # a private corpus: its name is not confirmed
    assert not Document.objects.filter(external_id="New").exists()


def test_jobs_fragment_polls_while_running_and_stops_when_done(client, owner, tram_corpus):
    client.force_login(owner)
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name="all-MiniLM-L6-v2")
    url = reverse("alignment:corpus_jobs", args=[tram_corpus.pk])
    running = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 1s"' in running and "<html" not in running
    EmbeddingRun.objects.filter(pk=run.pk).update(status="failed", error="RuntimeError: disk full")
    failed = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in failed
    assert "RuntimeError: disk full" in failed
    assert reverse("alignment:embedding_run_retry", args=[run.pk]) in failed


def test_retry_button_requeues_a_failed_run(client, owner, tram_corpus, django_capture_on_commit_callbacks):
    client.force_login(owner)
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name="all-MiniLM-L6-v2")
    EmbeddingRun.objects.filter(pk=run.pk).update(status="failed", error="boom")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("alignment:embedding_run_retry", args=[run.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "queued" and run.error == ""
    assert ProcrastinateJob.objects.filter(args={"run_id": run.pk}, status="todo").exists()


def test_outsider_cannot_retry_someone_elses_run(client, outsider, tram_corpus):
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name="all-MiniLM-L6-v2")
    EmbeddingRun.objects.filter(pk=run.pk).update(status="failed")
    client.force_login(outsider)
    assert client.post(reverse("alignment:embedding_run_retry", args=[run.pk])).status_code == 404
    run.refresh_from_db()
    assert run.status == "failed"


@pytest.mark.parametrize(
    "model",
    [
        "corpus",
        "document",
        "paragraph",
        "sentence",
        "documentpair",
        "encoder",
        "sentenceembedding",
        "embeddingrun",
        "alignmentrun",
        "alignedpair",
        "paragraphalignment",
        "candidatealignment",
    ],
)
def test_admin_lists_every_model(admin_client, tram_corpus, model):
    assert admin_client.get(f"/admin/alignment/{model}/").status_code == 200
