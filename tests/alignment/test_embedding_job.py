"""The embedding job, executed by real Procrastinate workers against the real database."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateJob

import alignment.aligning.measures
from alignment import services
from alignment.jobs.stalled import stalled_jobs_retry_async
from alignment.models import EmbeddingRun, Sentence, SentenceEmbedding
from models_ml.similarity.encoders import load_sentence_encoder

pytestmark = pytest.mark.django_db(transaction=True)

KILLED_SENTENCES = 160


def test_worker_embeds_every_sentence_once(tram_corpus, run_worker):
    run = services.embedding_run_create(corpus=tram_corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    sentences = Sentence.objects.filter(document__corpus=tram_corpus).count()
    assert run.status == EmbeddingRun.Status.SUCCEEDED
    assert run.total_sentences == run.embedded_sentences == sentences
    embeddings = SentenceEmbedding.objects.filter(sentence__document__corpus=tram_corpus)
    assert embeddings.count() == sentences
    vector = np.asarray(embeddings.first().vector, dtype=np.float32)
    assert vector.shape == (384,)
    assert abs(np.linalg.norm(vector) - 1.0) < 1e-4
    assert embeddings.first().encoder.name == settings.ENCODER_MODEL
    with connection.cursor() as cursor:  # the HNSW index is built once the first load is stored
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [embeddings.first().encoder.index_name])
        assert cursor.fetchone() is not None


def test_second_request_while_queued_returns_the_same_run(tram_corpus):
    first = services.embedding_run_create(corpus=tram_corpus, encoder_name=settings.ENCODER_MODEL)
    second = services.embedding_run_create(corpus=tram_corpus, encoder_name=settings.ENCODER_MODEL)
    assert first.pk == second.pk
    assert ProcrastinateJob.objects.filter(task_name="alignment.embed_corpus", args={"run_id": first.pk}).count() == 1


class FailingAfterBatches:
    """The real encoder, failing on batch ``fail_on`` like a worker running out of memory mid-job."""

    def __init__(self, fail_on: int) -> None:
        self.real = load_sentence_encoder(settings.ENCODER_MODEL)
        self.name, self.dimensions = self.real.name, self.real.dimensions
        self.fail_on = fail_on
        self.calls = 0
        self.encoded: list[str] = []

    def encode(self, sentences, *, batch_size=64):
        self.calls += 1
        if self.calls == self.fail_on:
            raise MemoryError("simulated out-of-memory on batch 3")
        self.encoded.extend(sentences)
        return self.real.encode(sentences, batch_size=batch_size)


def retry_recording(run, run_worker, monkeypatch) -> FailingAfterBatches:
    """Retry ``run`` with a recording encoder, run the worker, and return the encoder (what the retry encoded)."""
    recording = FailingAfterBatches(fail_on=-1)
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: recording)
    services.embedding_run_retry(run=run)
    run_worker()
    run.refresh_from_db()
    return recording


def test_failed_job_keeps_finished_batches_and_retry_embeds_only_the_rest(big_corpus, run_worker, monkeypatch, settings):
    corpus = big_corpus(40)
    settings.EMBEDDING_BATCH_SIZE = 8
    failing = FailingAfterBatches(fail_on=3)
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: failing)

    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.FAILED
    assert "MemoryError: simulated out-of-memory" in run.error
    assert run.batches_done == 2
    stored = set(SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).values_list("sentence__text", flat=True))
    assert stored == set(failing.encoded) and len(stored) == 16

    recording = FailingAfterBatches(fail_on=-1)
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: recording)
    services.embedding_run_retry(run=run)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED
    assert run.already_embedded == 16
    assert run.embedded_sentences == run.total_sentences == 40
    assert not stored & set(recording.encoded), "the retry re-encoded sentences that were already stored"
    assert len(recording.encoded) == 24
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == 40


@pytest.mark.slow  # a real worker, killed mid-job
def test_killed_worker_loses_no_finished_batch_and_requeued_job_resumes(big_corpus, run_worker, worker_subprocess_env, python_executable):
    corpus = big_corpus(KILLED_SENTENCES)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    # Ten batches of 16, each followed by a pause (a test hook), so the job is still mid-way when it is killed; no time
    # slices, which count the encoder's loading and on a loaded machine gave the worker back after the first batches.
    env = {**worker_subprocess_env, "EMBEDDING_BATCH_SIZE": "16", "JOB_TEST_STEP_DELAY_MS": "400", "JOB_SLICE_SECONDS": "0"}
    worker = subprocess.Popen([python_executable, "manage.py", "procrastinate", "worker"], env=env, cwd=settings.BASE_DIR)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.batches_done >= 3:
                break
            assert worker.poll() is None, "the worker exited before it was killed"
            time.sleep(0.02)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    run.refresh_from_db()
    stored_at_kill = SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count()
    assert run.status == EmbeddingRun.Status.RUNNING, "the job should have been killed mid-run"
    assert 0 < stored_at_kill < KILLED_SENTENCES
    assert stored_at_kill >= run.batches_done * 16  # every committed batch is stored

    # its own thread and loop: after browser tests, pytest-playwright keeps an event loop running in this thread
    with ThreadPoolExecutor(max_workers=1) as pool:
        requeued = pool.submit(asyncio.run, _retry_stalled()).result()
    assert requeued == 1
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED
    assert run.already_embedded == stored_at_kill
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == KILLED_SENTENCES


async def _retry_stalled() -> int:
    worker_app = app.with_connector(app.connector.get_worker_connector())
    async with worker_app.open_async():
        return await stalled_jobs_retry_async(worker_app, seconds_since_heartbeat=0)
