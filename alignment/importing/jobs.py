"""The Import page's background job: stage the upload in the database, then import it on a worker.

The web request only validates the form and the upload limits, checks the target corpus and
stores the files (:func:`import_job_create`); a worker runs :func:`import_job_execute`, which
calls the one import workflow (:func:`~alignment.importing.workflow.corpus_import_and_queue`)
and records each file's result as it goes, so the job page shows progress and, when the
worker dies, the requeued task skips the files already done.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from alignment import services
from alignment.importing.language import UNDETERMINED
from alignment.importing.models import ImportJob, ImportJobFile
from alignment.importing.readers import ImportOptions
from alignment.importing.service import FileImportResult
from alignment.importing.workflow import (
    CorpusTarget,
    ImportOutcome,
    ImportProgress,
    corpus_import_and_queue,
    import_corpus_remove_if_empty,
    import_target_check,
)
from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Pickup, error_text
from alignment.jobs.slices import TimeSlice, slice_check
from alignment.level_order import level_order_check_against_pairs
from alignment.models import Corpus

IMPORT_TASK = "alignment.import_files"


def import_job_create(
    *, user: AbstractBaseUser, corpus_name: str, language: str, pairing: str, options: ImportOptions,
    files: Iterable[tuple[str, bytes]],
) -> ImportJob:  # fmt: skip
    """Check the target corpus, stage ``(name, bytes)`` files and queue the import when the transaction commits.

    ValueError, before anything is stored, when the corpus is someone else's, in another language,
    a new corpus's settings are not valid, or the level order would turn the corpus's pairs round.
    """
    corpus = import_target_check(user=user, name=corpus_name, language=language)
    if corpus is None:  # an empty language is detected by the worker, from the files' text
        services.corpus_settings_check(language=language or UNDETERMINED, pairing=pairing)
    elif options.level_order:
        level_order_check_against_pairs(corpus, options.level_order)
    with transaction.atomic():
        job = ImportJob.objects.create(
            created_by=user, corpus_name=corpus_name, language=language, pairing=pairing, options=asdict(options)
        )
        staged = [ImportJobFile(job=job, index=index, name=name, content=data) for index, (name, data) in enumerate(files)]
        for file in staged:  # one at a time: bulk_create would build one statement holding every file
            file.save()
        job.files_total = len(staged)
        job.save(update_fields=["files_total"])
        enqueue_on_commit(IMPORT_TASK, job, job_id=job.pk)
    return job


def _staged_files(job: ImportJob, start: int) -> Iterator[tuple[str, bytes]]:
    """The staged files from position ``start`` on, read one at a time (a worker holds one file, not the upload)."""
    for pk in job.staged_files.filter(index__gte=start).order_by("index").values_list("pk", flat=True):
        staged = ImportJobFile.objects.get(pk=pk)
        yield staged.name, bytes(staged.content)


def _clean_up(job: ImportJob) -> bool:
    """Delete the staged files and remove a corpus this job created that got no document; True if it was removed."""
    job.staged_files.all().delete()
    job.refresh_from_db(fields=["corpus", "corpus_created"])
    return job.corpus_created and job.corpus is not None and import_corpus_remove_if_empty(corpus=job.corpus)


def _fail(job: ImportJob, reason: str) -> None:
    with transaction.atomic():
        removed = _clean_up(job)
        job.mark_failed(reason, corpus_removed=removed)


def import_job_execute(*, job_id: int, time_slice: TimeSlice | None = None) -> ImportJob:
    """Run an import job to the end (or resume it after a dead worker); the staged files are gone afterwards.

    A refused corpus fails the job with the reason; an import in which no file went in fails
    with the per-file errors in its report; any other error fails it and is re-raised.
    ``time_slice`` (in a worker): between files, once it has run out, the job gives its worker
    to other jobs and continues with the next file later (alignment/jobs/slices.py).
    """
    job = ImportJob.objects.select_related("created_by").get(pk=job_id)
    pickup = job.pickup()
    if pickup == Pickup.GAVE_UP:
        with transaction.atomic():  # pickup marked it failed with the reason; what is left is the clean-up
            ImportJob.objects.filter(pk=job.pk).update(corpus_removed=_clean_up(job))
        return job
    if pickup not in (Pickup.FRESH, Pickup.RESUME, Pickup.CONTINUE):
        return job
    results = list(job.results)

    def on_corpus(corpus: Corpus, created: bool) -> None:
        job.heartbeat(corpus=corpus, corpus_created=created)

    def on_file_done(result: FileImportResult) -> None:
        results.append(asdict(result))
        job.heartbeat(results=results)
        slice_check(time_slice)  # the file and its result are committed: a continuation starts with the next file

    try:
        outcome = corpus_import_and_queue(
            target=CorpusTarget(name=job.corpus_name, language=job.language, owner=job.created_by, pairing=job.pairing),
            files=_staged_files(job, start=len(results)), options=ImportOptions(**job.options), for_user=job.created_by,
            created_by=job.created_by, on_file_done=on_file_done, on_corpus=on_corpus,
            earlier=ImportProgress(corpus_created=job.corpus_created, files_done=job.report.files),
            stop=lambda: ImportJob.objects.filter(pk=job.pk, cancel_requested=True).exists(),
        )  # fmt: skip
    except ValueError as exc:  # the corpus was refused: a message for the user, not a crash
        _fail(job, str(exc))
        return job
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the job running: the task's retry resumes it
            _fail(job, error_text(exc))
        raise
    _finish(job, outcome)
    return job


def import_job_cancel(*, job: ImportJob) -> ImportJob:
    """A job that has not started is cancelled at once (its staged files deleted); a running one, or one waiting to
    continue after its time slice, stops before its next file: the files done stay imported and are paired, and no
    embedding or alignment is queued (the corpus page starts them)."""
    with transaction.atomic():
        locked = ImportJob.objects.select_for_update().get(pk=job.pk)
        if locked.status == ImportJob.Status.QUEUED and not locked.yielded and not locked.results:
            locked.mark_cancelled(corpus_removed=_clean_up(locked))  # the staged files go, as when a job ends
        elif locked.is_active:
            ImportJob.objects.filter(pk=locked.pk).update(cancel_requested=True)
    locked.refresh_from_db()
    return locked


def _finish(job: ImportJob, outcome: ImportOutcome) -> None:
    report = outcome.report
    fields = {
        "corpus": outcome.corpus, "corpus_removed": outcome.corpus_removed, "pairs_created": report.pairs_created,
        "direction": report.direction, "language_note": report.language_note,
        "embedding_run": outcome.embedding_run, "alignment_run": outcome.alignment_run,
    }  # fmt: skip
    with transaction.atomic():
        job.staged_files.all().delete()
        if report.stopped:  # asked to: the files done are imported and paired, the rest dropped with the staged files
            job.mark_cancelled(**fields)
        elif report.errors and not (report.documents_created or report.documents_unchanged):
            job.mark_failed(f"no file was imported: {len(report.errors)} of {len(report.files)} had errors (see the report)", **fields)
        elif not job.mark_succeeded(**fields):
            raise RuntimeError(f"import job {job.pk} stopped running before it finished (status {job.status})")
