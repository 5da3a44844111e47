"""Fair share of the workers: each user's lanes, priorities, and time slices that interleave long jobs.

Real Procrastinate workers (in-process, ``run_worker``) against the real database; the job rows
and Procrastinate's own tables are read back to see who ran when.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment import services
from alignment.aligning.service import alignment_run_create
from alignment.jobs.models import Pickup
from alignment.models import AlignmentRun, EmbeddingRun, SentenceEmbedding
from alignment.services import corpus_get_or_create
from tests.alignment.conftest import synthetic_sentences
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE

pytestmark = pytest.mark.django_db(transaction=True)


def _procrastinate_job(job) -> ProcrastinateJob:
    job.refresh_from_db()
    return ProcrastinateJob.objects.get(pk=job.procrastinate_job_id)


def _corpus_of(user, name: str, sentences: int):
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files

    corpus, _ = corpus_get_or_create(name=name, language="en", owner=user)
    lines = synthetic_sentences(sentences)
    text = "\n\n".join("\n".join(lines[i : i + 10]) for i in range(0, sentences, 10))
    assert not corpus_import_files(
        corpus=corpus, files=[(f"{name}-adv.txt", text.encode())], options=ImportOptions(format="presplit")
    ).errors
    return corpus


@pytest.fixture
def users(db):
    make = get_user_model().objects.create_user
    return make("anna", password="anna-pass-123"), make("bruno", password="bruno-pass-123")


def test_a_users_jobs_take_their_lane_and_jobs_without_a_user_take_none(users, settings) -> None:
    settings.JOB_USER_CONCURRENCY = 1
    anna, bruno = users
    first = services.embedding_run_create(corpus=_corpus_of(anna, "A1", 10), encoder_name=settings.ENCODER_MODEL, created_by=anna)
    second = services.embedding_run_create(corpus=_corpus_of(anna, "A2", 10), encoder_name=settings.ENCODER_MODEL, created_by=anna)
    other = services.embedding_run_create(corpus=_corpus_of(bruno, "B1", 10), encoder_name=settings.ENCODER_MODEL, created_by=bruno)
    nobody = services.embedding_run_create(corpus=_corpus_of(bruno, "N1", 10), encoder_name=settings.ENCODER_MODEL)
    assert _procrastinate_job(first).lock == _procrastinate_job(second).lock == f"user-{anna.pk}-0"
    assert _procrastinate_job(other).lock == f"user-{bruno.pk}-0"
    assert _procrastinate_job(nobody).lock is None


def test_with_two_lanes_a_new_job_takes_the_least_busy(users, settings) -> None:
    settings.JOB_USER_CONCURRENCY = 2
    anna, _ = users
    runs = [
        services.embedding_run_create(corpus=_corpus_of(anna, f"A{k}", 10), encoder_name=settings.ENCODER_MODEL, created_by=anna)
        for k in range(3)
    ]
    assert [_procrastinate_job(run).lock for run in runs] == [f"user-{anna.pk}-0", f"user-{anna.pk}-1", f"user-{anna.pk}-0"]


def test_a_one_pair_alignment_goes_before_bulk_work_and_a_corpus_run_does_not(users, tram_corpus) -> None:
    anna, _ = users
    one_pair = alignment_run_create(corpus=tram_corpus, pairs=list(tram_corpus.pairs.all()), aligner_config={"measure": "jaccard"})
    assert _procrastinate_job(one_pair).priority == 10
    embedding = services.embedding_run_create(corpus=tram_corpus, encoder_name=settings.ENCODER_MODEL, created_by=anna)
    assert _procrastinate_job(embedding).priority == 0


def test_a_long_embedding_gives_its_worker_back_between_batches_without_counting_attempts(users, run_worker, settings) -> None:
    settings.JOB_SLICE_SECONDS = 1e-9  # every batch ends a slice
    settings.EMBEDDING_BATCH_SIZE = 8
    anna, _ = users
    corpus = _corpus_of(anna, "Long", 40)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=anna)
    first_task = run.procrastinate_job_id
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert run.slices == 5 and run.attempts == 1  # 5 batches, each its own task; one attempt
    assert run.procrastinate_job_id != first_task  # the last slice ran as a continuation
    assert run.already_embedded == 0 and run.embedded_sentences == 40 == run.total_sentences
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == 40
    tasks = ProcrastinateJob.objects.filter(task_name="alignment.embed_corpus", args={"run_id": run.pk})
    assert tasks.count() == 6 and set(tasks.values_list("status", flat=True)) == {"succeeded"}


def test_a_job_queued_later_runs_between_the_slices_of_a_long_one(users, run_worker, settings) -> None:
    """One worker: Anna's long embedding was queued first, Bruno's short one after it; his finishes before hers."""
    settings.JOB_SLICE_SECONDS = 1e-9
    settings.EMBEDDING_BATCH_SIZE = 8
    anna, bruno = users
    long_run = services.embedding_run_create(corpus=_corpus_of(anna, "Long", 48), encoder_name=settings.ENCODER_MODEL, created_by=anna)
    short_run = services.embedding_run_create(corpus=_corpus_of(bruno, "Short", 8), encoder_name=settings.ENCODER_MODEL, created_by=bruno)
    run_worker()
    long_run.refresh_from_db()
    short_run.refresh_from_db()
    assert long_run.status == short_run.status == EmbeddingRun.Status.SUCCEEDED
    assert long_run.started_at < short_run.started_at  # Anna's job took the worker first ...
    assert short_run.finished_at < long_run.finished_at  # ... and gave it back before it was done


def test_a_job_cancelled_while_it_waits_for_its_next_slice_stays_cancelled(tram_corpus, run_worker, settings) -> None:
    settings.JOB_SLICE_SECONDS = 1e-9
    pairs = _six_pairs(tram_corpus)
    run = alignment_run_create(corpus=tram_corpus, pairs=pairs, aligner_config={"measure": "jaccard", "paragraph_variant": "none"})
    assert run.pickup() is Pickup.FRESH and run.mark_yielded()  # as the wrapper does at the end of a slice
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.QUEUED and run.yielded
    assert run.mark_cancelled()
    run_worker()
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and run.pairs_done == 0


def test_a_continuation_resumes_an_alignment_run_where_its_slice_ended(tram_corpus, run_worker, settings) -> None:
    settings.JOB_SLICE_SECONDS = 1e-9
    pairs = _six_pairs(tram_corpus)
    run = alignment_run_create(corpus=tram_corpus, pairs=pairs, aligner_config={"measure": "jaccard", "paragraph_variant": "none"})
    assert _procrastinate_job(run).priority == 0  # six pairs: bulk work
    run_worker()
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == 6 and run.slices == 6 and run.attempts == 1
    assert run.aligned_pairs.count() == 6


def _six_pairs(corpus) -> list:
    """Six document pairs in ``corpus`` (the tram article under six names)."""
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files

    files = []
    for k in range(6):
        files += [(f"Tram{k}-adv.txt", SAMPLE_ADV.encode()), (f"Tram{k}-ele.txt", SAMPLE_ELE.replace("city", f"city {k}").encode())]
    corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text"))
    pairs = list(corpus.pairs.exclude(complex_document__external_id="Tram").order_by("pk"))
    assert len(pairs) == 6
    return pairs
