"""A mining job's prepare stops within a batch of a cancel (between stored batches, documents and chunks of the faiss
build), keeps what it stored, and a job started again resumes after it."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from alignment.mining import cancelling, document_vectors, search_backend
from alignment.mining import service as mining
from alignment.mining.cancelling import PrepareCancelled
from alignment.mining.models import DocumentEmbedding, MiningIndexPart, MiningJob, MiningSequence, MiningShard
from alignment.models import Document
from models_ml.mining import vector_index
from models_ml.mining.vector_index import FaissIndex
from tests.alignment.test_mining import embedded_news_corpora
from tests.alignment.test_mining_bulk_writes import _job, _run_shards
from tests.alignment.test_muss_rows import encode


@pytest.fixture(autouse=True)
def check_every_step(monkeypatch) -> None:
    monkeypatch.setattr(cancelling, "CHECK_EVERY", 0.0)  # read the flag at every check, not once a second


def test_a_muss_prepare_cancelled_after_its_second_batch_stops_there_and_resumes_after_it(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)  # batches of two sequences
    calls = []

    def encode_then_cancel(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            mining.mining_job_cancel(job=job)  # the user's cancel, while the second batch is encoded
        return encode(texts)

    mining.mining_job_prepare(job_id=job.pk, encode=encode_then_cancel)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and len(calls) == 2
    assert MiningSequence.objects.filter(job=job).count() == 4  # both batches kept
    assert not MiningShard.objects.filter(job=job).exists()

    config = {"k": 3, "encode_batch": 2, "min_margin": 0.5, "max_distance": 1.5}  # _job's: the same job, resumed
    again, created = mining.mining_job_create(source_corpus=job.source_corpus, method="muss", config=config)
    assert again.pk == job.pk and not created and again.status == MiningJob.Status.QUEUED
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    rows = list(MiningSequence.objects.filter(job=job).order_by("index").values_list("index", flat=True))
    assert rows == list(range(len(rows))) and len(rows) > 4  # resumed after the fourth, nothing stored twice
    _run_shards(job)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error


def test_a_cancel_during_the_faiss_build_stops_it_between_chunks_and_stores_no_index(owner, db, monkeypatch, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "faiss"
    monkeypatch.setattr(vector_index, "ADD_CHUNK", 2)
    monkeypatch.setattr(search_backend, "SELF_SEARCH_EXACT_BELOW", 3)  # HNSW: the prepare builds no exact index
    job = _job(owner, monkeypatch)
    chunks = []

    class CancelledWhileBuilt(FaissIndex):
        @classmethod
        def from_chunks(cls, chunks_, total, *, between_chunks=None, **settings_):
            mining.mining_job_cancel(job=job)  # asked once the vectors are stored, while the index is built

            def counted() -> None:
                chunks.append(1)
                between_chunks()

            return super().from_chunks(chunks_, total, between_chunks=counted, **settings_)

    monkeypatch.setattr(search_backend, "FaissIndex", CancelledWhileBuilt)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and chunks == [1]  # stopped after the first chunk
    assert MiningSequence.objects.filter(job=job).count() > 4 and not MiningIndexPart.objects.filter(job=job).exists()
    assert not job.search_index and not MiningShard.objects.filter(job=job).exists()


def test_an_lha_prepare_cancelled_after_a_batch_keeps_its_vectors_and_resumes(owner, run_worker, monkeypatch) -> None:
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_d": 0.3}, shard_documents=2)
    monkeypatch.setattr(document_vectors, "DOCUMENT_VECTOR_BATCH", 1)  # a batch of one document
    original = document_vectors._document_vectors_store

    def cancel_on_first(corpus, encoder, after):
        mining.mining_job_cancel(job=job)
        return original(corpus, encoder, after)

    monkeypatch.setattr(document_vectors, "_document_vectors_store", cancel_on_first)
    mining.mining_job_prepare(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED  # each corpus stopped after its batch (the two are stored at once)
    assert DocumentEmbedding.objects.count() == 2 and not MiningShard.objects.filter(job=job).exists()
    assert {d.corpus_id for d in Document.objects.filter(embeddings__isnull=False)} == {source.pk, target.pk}

    monkeypatch.setattr(document_vectors, "_document_vectors_store", original)
    assert not mining.mining_job_create(source_corpus=source, target_corpus=target, config={"theta_d": 0.3}, shard_documents=2)[1]
    mining.mining_job_prepare(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.RUNNING and MiningShard.objects.filter(job=job).count() == 2
    assert DocumentEmbedding.objects.count() == Document.objects.filter(corpus__in=[source, target]).count()


def _cancel_from_another_connection(job: MiningJob, after: float) -> threading.Thread:
    """The user's cancel, committed ``after`` seconds from now by another thread (as the web process would)."""

    def cancel() -> None:
        time.sleep(after)
        try:
            MiningJob.objects.filter(pk=job.pk).update(cancel_requested=True)
        finally:
            connections.close_all()

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def test_a_long_statement_under_the_check_is_stopped_within_seconds_and_the_connection_still_works(
    owner, transactional_db, monkeypatch
) -> None:
    monkeypatch.setattr(cancelling, "CHECK_EVERY", 0.1)
    job = _job(owner, monkeypatch)
    canceller = _cancel_from_another_connection(job, 0.5)
    started = time.monotonic()
    with pytest.raises(PrepareCancelled), cancelling.CancelCheck(job).statement(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(60)")  # a CREATE INDEX over a million rows, for the test's purpose
    canceller.join()
    assert time.monotonic() - started < 5
    assert MiningJob.objects.get(pk=job.pk).cancel_requested  # the connection answers again
    with cancelling.NEVER.statement(), connection.cursor() as cursor:  # no job: no helper, nothing cancelled
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_the_prepare_runs_pgvector_s_index_build_under_its_check(owner, transactional_db, monkeypatch, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "pgvector"
    monkeypatch.setattr(cancelling, "CHECK_EVERY", 0.1)
    job = _job(owner, monkeypatch)
    built = []

    def slow_build(name, table, dimensions, owner_column, owner_id, *, check, **kwargs) -> None:
        built.append(name)
        canceller = _cancel_from_another_connection(job, 0.3)
        with check.statement(), connection.cursor() as cursor:  # the prepare's own check, as the real build runs
            cursor.execute("SELECT pg_sleep(60)")
        canceller.join()

    monkeypatch.setattr(search_backend, "partial_hnsw_index", slow_build)
    started = time.monotonic()
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    job.refresh_from_db()
    assert built == [f"mining_sequence_hnsw_{job.pk}"] and time.monotonic() - started < 10
    assert job.status == MiningJob.Status.CANCELLED and not MiningShard.objects.filter(job=job).exists()
