"""A load that is large against a partial HNSW index goes in without it, and the index is built again after: pgvector
inserts a vector into the graph by searching it, about ten times a vector's share of a build."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest
from django.conf import settings
from django.db import DatabaseError, connection, connections

from alignment import services
from alignment.index_loading import indexed_rows
from alignment.mining import document_vectors
from alignment.mining.cancelling import NEVER
from alignment.mining.models import DocumentEmbedding
from alignment.models import Document, EmbeddingRun, Encoder

pytestmark = pytest.mark.django_db(transaction=True)  # DROP INDEX CONCURRENTLY and the builds run outside a transaction


def _index_oid(name: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_class WHERE relname = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else None


def _embed(corpus, run_worker, monkeypatch) -> list[int | None]:
    """Embed ``corpus`` in the worker; the encoder's indexed rows as each load into the table began (None: no index)."""
    seen: list[int | None] = []
    load = services.embed_missing

    def watched(run, *args, **kwargs):
        encoder = Encoder.objects.filter(name=settings.ENCODER_MODEL).first()
        seen.append(indexed_rows(encoder.index_name) if encoder else None)
        return load(run, *args, **kwargs)

    monkeypatch.setattr(services, "embed_missing", watched)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker(["embedding"])
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    return seen


def test_a_second_corpus_as_large_as_the_index_is_embedded_without_it_and_the_index_is_built_again(big_corpus, run_worker, monkeypatch):
    assert _embed(big_corpus(40), run_worker, monkeypatch) == [None]  # the first corpus: no index yet, built at the end
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    first = _index_oid(encoder.index_name)
    assert indexed_rows(encoder.index_name) == 40

    assert _embed(big_corpus(30), run_worker, monkeypatch) == [None]  # 30 of 40: dropped before the load
    assert indexed_rows(encoder.index_name) == 70 and _index_oid(encoder.index_name) != first  # built again over all
    rebuilt = _index_oid(encoder.index_name)

    assert _embed(big_corpus(5), run_worker, monkeypatch) == [70]  # 5 of 70: into the index as it is
    assert _index_oid(encoder.index_name) == rebuilt


def _documents(corpus, count: int) -> list[Document]:
    return Document.objects.bulk_create(
        Document(
            corpus=corpus, external_id=f"d{n}", level="adv", raw_text="", content_hash=f"{corpus.pk}-{n}", text_hash=f"{corpus.pk}-{n}"
        )
        for n in range(count)
    )


def test_an_lha_prepare_of_many_new_documents_drops_the_document_index_and_few_keep_it(owner):
    encoder = services.encoder_get_or_create(name="toy-3d", dimensions=3)
    corpora = [services.corpus_get_or_create(name=name, language="en", owner=owner)[0] for name in ("Stored", "Many", "Few")]
    rng = np.random.default_rng(0)
    DocumentEmbedding.objects.bulk_create(
        DocumentEmbedding(document=document, encoder=encoder, vector=rng.standard_normal(3).tolist())
        for document in _documents(corpora[0], 8)
    )
    document_vectors.document_index_ensure(encoder, NEVER)
    name = document_vectors.document_index_name(encoder)
    assert indexed_rows(name) == 8
    _documents(corpora[2], 1)
    assert document_vectors.document_index_make_room([corpora[2]], encoder) is False  # 1 of 8: kept
    assert indexed_rows(name) == 8
    _documents(corpora[1], 2)
    assert document_vectors.document_index_make_room([corpora[1]], encoder) is True  # 2 of 8: a quarter, dropped
    assert indexed_rows(name) is None and _index_oid(name) is None
    assert document_vectors.document_index_make_room([corpora[1]], encoder) is False  # no index: nothing to drop

    with connection.cursor() as cursor, pytest.raises(DatabaseError):  # a failed CONCURRENTLY build's invalid index,
        cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {name} ON alignment_documentembedding (encoder_id)")  # as a cancelled drop leaves
    assert _index_oid(name) is not None and indexed_rows(name) is None
    document_vectors.document_index_ensure(encoder, NEVER)  # dropped and built again, not skipped by IF NOT EXISTS
    assert indexed_rows(name) == 8


def test_the_drop_waits_for_a_reader_but_stops_within_seconds_of_a_cancel_and_the_index_is_built_again(big_corpus, run_worker, monkeypatch):
    """``DROP INDEX CONCURRENTLY`` waits for every transaction that reads the table: a reader left open must not hold
    the run past its cancel. The index it leaves invalid is dropped and built again at the encoder's next run end."""
    _embed(big_corpus(40), run_worker, monkeypatch)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    run = services.embedding_run_create(corpus=big_corpus(30), encoder_name=settings.ENCODER_MODEL)
    assert run.mark_running()
    with _reader_open(), _cancelled_after(1.0, run):
        started = time.monotonic()
        with pytest.raises(services.RunStopped):
            services.encoder_index_make_room(encoder=encoder, adding=30, run=run)
        assert time.monotonic() - started < 5
    assert indexed_rows(encoder.index_name) is None  # not usable
    assert services.encoder_index_ensure(encoder=encoder) is True and indexed_rows(encoder.index_name) == 40


def test_the_build_drops_an_abandoned_index_under_the_run_cancel_too(big_corpus, run_worker, monkeypatch):
    """The build's first step, dropping an invalid index a cancelled build or drop left, waits for every reader as the
    build does: it too stops within seconds of the run's cancel (it waited for the reader's end, 15 s here)."""
    _embed(big_corpus(40), run_worker, monkeypatch)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {encoder.index_name}")
        with pytest.raises(DatabaseError):  # a failed CONCURRENTLY build's invalid index, as a cancelled one leaves
            cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {encoder.index_name} ON alignment_sentenceembedding (encoder_id)")
    assert _index_oid(encoder.index_name) is not None and indexed_rows(encoder.index_name) is None
    run = services.embedding_run_create(corpus=big_corpus(3), encoder_name=settings.ENCODER_MODEL)
    assert run.mark_running()
    with _reader_open(), _cancelled_after(1.0, run):
        started = time.monotonic()
        with pytest.raises(services.RunStopped):
            services.encoder_index_ensure(encoder=encoder, run=run)
        assert time.monotonic() - started < 5
    assert services.encoder_index_ensure(encoder=encoder) is True and indexed_rows(encoder.index_name) == 40


@contextlib.contextmanager
def _reader_open():
    """Another session in the middle of a transaction that read the vectors' table, until the block ends."""
    reader = connections.create_connection("default")
    reader.set_autocommit(False)
    with reader.cursor() as cursor:
        cursor.execute("SET idle_in_transaction_session_timeout = '15s'")  # a step that ignored the cancel fails, not hangs
        cursor.execute("SELECT count(*) FROM alignment_sentenceembedding")
    try:
        yield
    finally:
        with contextlib.suppress(DatabaseError):  # ended by its timeout when a step waited it out
            reader.rollback()
        reader.close()


@contextlib.contextmanager
def _cancelled_after(seconds: float, run):
    timer = threading.Timer(seconds, _cancel, args=(run,))
    timer.start()
    try:
        yield
    finally:
        timer.join()


def _cancel(run) -> None:
    try:
        services.embedding_run_cancel(run=run)
    finally:
        connections.close_all()
