"""The Import page runs the import as a background job: staged upload, a real worker, the report on the job page."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from alignment import services
from alignment.importing.jobs import import_job_create, import_job_execute
from alignment.importing.models import ImportJob, ImportJobFile
from alignment.importing.readers import ImportOptions
from alignment.models import AlignmentRun, Corpus, Document, EmbeddingRun
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE

pytestmark = pytest.mark.django_db(transaction=True)

PATTERN = r"^(?P<id>.+)-(?P<level>[^-]+)$"


def _form(files: list[SimpleUploadedFile], *, corpus: str = "Uploaded", file_format: str = "text") -> dict:
    return {"corpus_name": corpus, "language": "en", "format": file_format, "paragraph_mode": "blank",
            "filename_pattern": PATTERN, "pairing": "all", "files": files}  # fmt: skip


def _submit(client, files: list[SimpleUploadedFile], **form) -> ImportJob:
    response = client.post(reverse("alignment:corpus_import"), _form(files, **form))
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ImportJob.objects.get()
    assert response["Location"] == reverse("alignment:import_job", args=[job.pk])
    return job


def _page(client, job: ImportJob) -> str:
    response = client.get(reverse("alignment:import_job", args=[job.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_import_page_redirects_at_once_and_a_worker_imports_and_queues(client, owner, run_worker):
    client.force_login(owner)
    files = [
        SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode()),
        SimpleUploadedFile("Tram-ele.txt", SAMPLE_ELE.encode()),
        SimpleUploadedFile("Broken-adv.txt", b"\xff\xfe\x00\x00garbage"),
    ]
    job = _submit(client, files)
    # Nothing is imported in the request: the files wait in the database for a worker.
    assert job.status == "queued" and job.files_total == 3 and job.procrastinate_job_id is not None
    assert list(ImportJobFile.objects.filter(job=job).values_list("name", flat=True)) == ["Tram-adv.txt", "Tram-ele.txt", "Broken-adv.txt"]
    assert not Corpus.objects.filter(name="Uploaded").exists() and not Document.objects.exists()
    waiting = _page(client, job)
    assert "waiting for a worker" in waiting and 'hx-trigger="every 1s"' in waiting

    run_worker(["imports", "alignment"])

    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    corpus = Corpus.objects.get(name="Uploaded")
    assert corpus.owner == owner and job.corpus == corpus and job.corpus_created
    assert Document.objects.filter(corpus=corpus).count() == 2
    assert not ImportJobFile.objects.filter(job=job).exists()  # the staged upload is gone
    embedding = EmbeddingRun.objects.get(corpus=corpus)
    alignment = AlignmentRun.objects.get(corpus=corpus)
    assert job.embedding_run == embedding and embedding.created_by == owner and job.alignment_run == alignment
    html = _page(client, job)
    assert "hx-trigger" not in html  # finished: the card stops polling
    assert "2 documents created" in html and "1 new pair" in html
    assert "1 file not imported" in html and "Broken-adv.txt" in html
    assert f"Embedding queued (run #{embedding.pk}" in html and "Alignment queued for 1 new pair" in html
    assert reverse("alignment:corpus_detail", args=[corpus.pk]) in html
    assert reverse("alignment:alignment_run_detail", args=[alignment.pk]) in html


def test_the_polled_card_is_a_fragment(client, owner):
    client.force_login(owner)
    job = _submit(client, [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode())])
    fragment = client.get(reverse("alignment:import_job", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith("<article") and f'id="import-{job.pk}"' in fragment and "<html" not in fragment


def test_bad_input_is_reported_with_file_and_line_and_a_new_corpus_that_got_nothing_is_removed(client, owner, run_worker):
    client.force_login(owner)
    files = [
        SimpleUploadedFile("Rows.csv", b"adv,ele\nA complex sentence.,A simple one.\nOne field only\n"),
        SimpleUploadedFile("Latin.csv", b"adv,ele\n\xff\xfe\x00\x00 broken,\x00\x00\xd8\n"),
    ]
    job = _submit(client, files, corpus="Never", file_format="csv")
    run_worker(["imports", "alignment"])
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "no file was imported: 2 of 2 had errors (see the report)"
    assert job.corpus_created and job.corpus_removed and job.corpus is None
    assert not Corpus.objects.filter(name="Never").exists()
    assert not ImportJobFile.objects.exists()
    html = _page(client, job)
    assert "Rows.csv, line 3: row has 1 fields but the header has 2" in html
    assert "Latin.csv" in html and "2 files not imported" in html
    assert "the new corpus Never was not kept" in html


def test_a_failed_import_into_an_existing_corpus_keeps_it(client, owner, run_worker):
    corpus, _ = services.corpus_get_or_create(name="Kept", language="en", owner=owner)
    client.force_login(owner)
    job = _submit(client, [SimpleUploadedFile("Broken-adv.txt", b"\xff\xfe\x00\x00garbage")], corpus="Kept")
    run_worker(["imports", "alignment"])
    job.refresh_from_db()
    assert job.status == "failed" and not job.corpus_created and not job.corpus_removed
    assert Corpus.objects.filter(pk=corpus.pk).exists() and job.corpus_id == corpus.pk


def test_a_corpus_taken_by_someone_else_before_the_job_runs_fails_the_job_and_stores_nothing(client, owner, outsider, run_worker):
    client.force_login(owner)
    job = _submit(client, [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode())], corpus="Contested")
    services.corpus_get_or_create(name="Contested", language="en", owner=outsider)  # between the request and the worker
    run_worker(["imports", "alignment"])
    job.refresh_from_db()
    assert job.status == "failed" and "is not available" in job.error
    assert not Document.objects.exists() and not ImportJobFile.objects.exists()
    assert Corpus.objects.get(name="Contested").owner == outsider  # someone else's corpus is never removed
    assert "is not available" in _page(client, job)


def test_an_upload_over_the_file_limit_is_refused_before_anything_is_staged(client, owner, settings):
    settings.IMPORT_MAX_FILE_BYTES = 100_000
    client.force_login(owner)
    files = [SimpleUploadedFile("Small-adv.txt", SAMPLE_ADV.encode()), SimpleUploadedFile("Huge-adv.txt", b"Words here. " * 20_000)]
    response = client.post(reverse("alignment:corpus_import"), _form(files))
    assert response.status_code == 413 and "Huge-adv.txt: the file is over the limit" in response.content.decode()
    assert not ImportJob.objects.exists() and not ImportJobFile.objects.exists()


def test_a_refused_corpus_is_a_form_error_and_stages_nothing(client, owner, outsider):
    services.corpus_get_or_create(name="Theirs", language="en", owner=outsider)
    client.force_login(owner)
    response = client.post(reverse("alignment:corpus_import"), _form([SimpleUploadedFile("A-adv.txt", b"Text.")], corpus="Theirs"))
    assert response.status_code == 200 and "is not available" in response.content.decode()
    assert not ImportJob.objects.exists() and not ImportJobFile.objects.exists()


def test_only_the_importer_and_staff_see_an_import_job(client, owner, outsider):
    client.force_login(owner)
    job = _submit(client, [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode())])
    url = reverse("alignment:import_job", args=[job.pk])
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert f"Import #{job.pk}" not in client.get(reverse("alignment:corpus_import")).content.decode()
    client.force_login(get_user_model().objects.create_user("boss", password="boss-pass-123", is_staff=True))
    assert client.get(url).status_code == 200


def test_a_job_whose_worker_died_too_often_fails_and_cleans_up(owner, settings):
    settings.JOB_MAX_ATTEMPTS = 1
    job = import_job_create(
        user=owner, corpus_name="Half", language="en", pairing="all", options=ImportOptions(), files=[("A-adv.txt", b"Text.")]
    )
    corpus, _ = services.corpus_get_or_create(name="Half", language="en", owner=owner)  # as the dead attempt left it
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=1, corpus=corpus, corpus_created=True)
    import_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "the worker running this job stopped (attempt 1 of 1)"
    assert job.corpus_removed and not Corpus.objects.filter(name="Half").exists() and not ImportJobFile.objects.exists()


def test_the_command_removes_a_new_corpus_when_no_file_went_in(tmp_path, owner):
    (tmp_path / "Broken-adv.txt").write_bytes(b"\xff\xfe\x00\x00garbage")
    with pytest.raises(CommandError, match="1 of 1 files were not imported .*the new corpus 'Empty' got nothing and was removed"):
        call_command("import_corpus", str(tmp_path), corpus="Empty", owner="owner", stdout=StringIO(), verbosity=0)
    assert not Corpus.objects.filter(name="Empty").exists()


def test_a_waiting_import_is_cancelled_at_once_from_its_card_by_its_importer_only(client, owner, outsider, run_worker):
    client.force_login(owner)
    job = _submit(client, [SimpleUploadedFile("Tram-adv.txt", SAMPLE_ADV.encode())])
    cancel = reverse("alignment:import_job_cancel", args=[job.pk])
    assert cancel in _page(client, job)  # the card's Cancel button
    client.force_login(outsider)
    assert client.post(cancel).status_code == 404
    client.force_login(owner)
    assert client.post(cancel)["Location"] == reverse("alignment:import_job", args=[job.pk])
    job.refresh_from_db()
    assert job.status == "cancelled" and not ImportJobFile.objects.filter(job=job).exists()
    run_worker(["imports"])  # its task finds it cancelled: nothing is imported
    assert not Corpus.objects.filter(name="Uploaded").exists() and ImportJob.objects.get(pk=job.pk).status == "cancelled"
    html = _page(client, job)
    assert "Cancelled after 0 of 1 file: nothing was imported." in html and cancel not in html


def test_a_running_import_asked_to_stop_keeps_the_files_done_paired_and_queues_nothing(client, owner, monkeypatch):
    """Asked to stop during its second file, the job imports no third one: the first pair's two files are in the
    corpus and paired, the staged files are gone, and no embedding or alignment is queued."""
    from alignment.importing import jobs, service

    names = ["Tram-adv.txt", "Tram-ele.txt", "Bus-adv.txt", "Bus-ele.txt"]
    texts = [SAMPLE_ADV, SAMPLE_ELE, SAMPLE_ADV.replace("tram", "bus"), SAMPLE_ELE.replace("tram", "bus")]
    job = import_job_create(
        user=owner, corpus_name="Stopped", language="en", pairing="all",
        options=ImportOptions(format="text", paragraph_mode="blank", filename_pattern=PATTERN),
        files=[(name, text.encode()) for name, text in zip(names, texts, strict=True)],
    )  # fmt: skip
    one_file, done = service._import_one_file, []

    def import_one_file(**arguments):
        done.append(arguments["parsed"].name)
        if len(done) == 2:  # the importer presses Cancel while the second file is being stored
            assert jobs.import_job_cancel(job=job).cancel_requested
        return one_file(**arguments)

    monkeypatch.setattr(service, "_import_one_file", import_one_file)
    import_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "cancelled" and done == names[:2] and job.files_done == 2
    corpus = Corpus.objects.get(name="Stopped")
    assert sorted(Document.objects.filter(corpus=corpus).values_list("external_id", "level")) == [("Tram", "adv"), ("Tram", "ele")]
    assert job.pairs_created == corpus.pairs.count() == 1 and not ImportJobFile.objects.filter(job=job).exists()
    assert job.embedding_run is None and not EmbeddingRun.objects.filter(corpus=corpus).exists()
    assert not AlignmentRun.objects.filter(corpus=corpus).exists()
    client.force_login(owner)
    html = _page(client, job)
    assert "Cancelled after 2 of 4 files: the documents of those files are in the corpus and paired" in html
    assert jobs.import_job_cancel(job=job).status == "cancelled"  # a second press changes nothing
