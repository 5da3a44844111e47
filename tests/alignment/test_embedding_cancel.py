"""An embedding run is cancelled from its card: at once when queued, after the batch in flight when running (a
shard's worker likewise), its index build within seconds; what was stored stays and a retry embeds only the rest."""

from __future__ import annotations

import threading
import time

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction
from django.urls import reverse

import alignment.aligning.measures
from alignment import services
from alignment.models import EmbeddingRun, EmbeddingShard, Encoder, SentenceEmbedding
from tests.alignment.test_embedding_job import FailingAfterBatches, retry_recording

pytestmark = pytest.mark.django_db(transaction=True)


class CancellingOnBatch(FailingAfterBatches):
    """The real encoder; on batch ``cancel_on`` the user presses Cancel (another connection) while it encodes."""

    def __init__(self, cancel_on: int) -> None:
        super().__init__(fail_on=-1)
        self.cancel_on = cancel_on

    def encode(self, sentences, *, batch_size=64):
        if self.calls + 1 == self.cancel_on:
            run = EmbeddingRun.objects.get()
            thread = threading.Thread(target=_cancel_from_another_connection, args=(run,))
            thread.start()
            thread.join()
        return super().encode(sentences, batch_size=batch_size)


def _cancel_from_another_connection(run: EmbeddingRun) -> None:
    try:
        services.embedding_run_cancel(run=run)
    finally:
        connections.close_all()


def _stored(corpus) -> int:
    return SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count()


def _index_state(name: str):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [name],
        )
        return cursor.fetchone()


@pytest.fixture
def batches_of_8(settings):
    settings.EMBEDDING_BATCH_SIZE = 8
    return settings


def test_a_queued_run_is_cancelled_at_once_and_its_task_embeds_nothing(big_corpus, run_worker):
    corpus = big_corpus(40)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run = services.embedding_run_cancel(run=run)
    assert run.status == EmbeddingRun.Status.CANCELLED and run.finished_at is not None
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.CANCELLED
    assert _stored(corpus) == 0


def test_a_running_run_stops_after_the_batch_in_flight_and_a_retry_embeds_only_the_rest(big_corpus, run_worker, batches_of_8, monkeypatch):
    corpus = big_corpus(40)
    cancelling = CancellingOnBatch(cancel_on=2)  # batch 1 stored, Cancel pressed while batch 2 encodes
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: cancelling)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.CANCELLED, run.error
    assert cancelling.calls == 2, "the worker encoded on after the cancel"
    assert _stored(corpus) == 16  # the batch in flight is kept with the one before it, nothing after
    assert _index_state(Encoder.objects.get().index_name) is None, "a cancelled run built the index"

    recording = retry_recording(run, run_worker, monkeypatch)
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert _stored(corpus) == 40 and len(recording.encoded) == 24
    assert _index_state(Encoder.objects.get().index_name)[0] is True


def test_a_sharded_run_cancels_its_shards_and_their_workers_stop(big_corpus, run_worker, batches_of_8, monkeypatch):
    batches_of_8.EMBEDDING_SHARD_SENTENCES = 16  # shards of 16, 16 and the rest
    corpus = big_corpus(40)
    cancelling = CancellingOnBatch(cancel_on=3)  # shard 0 stores 2 batches; Cancel while shard 1 encodes its first
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: cancelling)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    shards = list(EmbeddingShard.objects.filter(run=run).order_by("index").values_list("status", flat=True))
    assert run.status == EmbeddingRun.Status.CANCELLED
    assert shards == ["succeeded", "cancelled", "cancelled"], shards
    assert cancelling.calls == 3 and _stored(corpus) == 24

    services.embedding_run_retry(run=run)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert _stored(corpus) == 40
    assert list(EmbeddingShard.objects.filter(run=run).values_list("status", flat=True)) == ["succeeded"] * 3


def test_the_index_build_stops_within_seconds_of_a_cancel(big_corpus):
    corpus = big_corpus(8)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    assert run.mark_running()
    timer = threading.Timer(1.0, _cancel_from_another_connection, args=(run,))
    started = time.monotonic()
    timer.start()
    stop = pytest.raises(services.RunStopped, match="stopped during its index build")
    with stop, services._stopped_when_run_stops(run), connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(60)")  # stands for CREATE INDEX over millions of vectors
    assert time.monotonic() - started < 5
    timer.join()
    with connection.cursor() as cursor:  # the connection answers again
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_an_invalid_index_left_by_a_cancelled_build_is_dropped_and_built_again(big_corpus, run_worker):
    corpus = big_corpus(8)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    encoder = Encoder.objects.get()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {encoder.index_name}")
        with pytest.raises(DatabaseError):  # a CONCURRENTLY build that fails leaves its invalid index, as a cancelled one does
            cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {encoder.index_name} ON alignment_sentenceembedding (encoder_id)")
    assert _index_state(encoder.index_name)[0] is False
    assert services.encoder_index_ensure(encoder=encoder) is True
    valid, definition = _index_state(encoder.index_name)
    assert valid is True and "hnsw" in definition
    assert services.encoder_index_ensure(encoder=encoder) is False  # valid: nothing to do
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED


def test_only_the_owner_and_staff_cancel_an_embedding_run_from_its_card(client, big_corpus, owner, outsider):
    corpus = big_corpus(8)
    corpus.is_shared = True
    corpus.save(update_fields=["is_shared"])
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=owner)
    url = reverse("alignment:embedding_run_cancel", args=[run.pk])
    client.force_login(owner)
    page = client.get(reverse("alignment:corpus_detail", args=[corpus.pk])).content.decode()
    assert f'action="{url}"' in page, "the queued run's card has no Cancel button"
    client.force_login(outsider)
    assert client.get(reverse("alignment:corpus_detail", args=[corpus.pk])).content.decode().count(url) == 0
    assert client.post(url).status_code == 403
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.QUEUED
    client.force_login(owner)
    assert client.get(url).status_code == 405
    response = client.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.CANCELLED
    retry = reverse("alignment:embedding_run_retry", args=[run.pk])
    assert f'action="{retry}"' in response.content.decode() and "Cancelled" in response.content.decode()
    assert client.post(retry).status_code == 302
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.QUEUED


def test_the_runs_index_build_runs_under_its_cancel(big_corpus, monkeypatch):
    corpus = big_corpus(8)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    assert run.mark_running()
    encoder = Encoder.objects.create(name=settings.ENCODER_MODEL, dimensions=384)
    watched = []
    real = services.statement_stopped_when

    def spy(requested, stopped, **kwargs):
        watched.append((requested(), str(stopped())))
        return real(requested, stopped, **kwargs)

    monkeypatch.setattr(services, "statement_stopped_when", spy)
    assert services.encoder_index_ensure(encoder=encoder, run=run) is True
    assert watched == [(False, f"embedding run {run.pk} stopped during its index build")]


def test_two_runs_building_one_encoders_index_take_turns_and_a_waiting_run_stops_on_its_own_cancel(big_corpus, run_worker, monkeypatch):
    """Two runs of one encoder ending together: the second waits for the first's build. Before, it issued its own
    ``CREATE INDEX CONCURRENTLY`` and failed ("tuple concurrently updated") or returned with the index still invalid."""
    monkeypatch.setattr(services, "INDEX_TURN_POLL_SECONDS", 0.1)
    corpus = big_corpus(8)
    services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    encoder = Encoder.objects.get()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {encoder.index_name}")
    held, release, first = threading.Event(), threading.Event(), []

    def old_snapshot() -> None:  # a reader whose snapshot the first run's CONCURRENTLY build waits for, holding it there
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor.execute("SELECT count(*) FROM alignment_sentenceembedding")
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    def first_run_builds() -> None:
        try:
            first.append(services.encoder_index_ensure(encoder=encoder))
        except Exception as error:
            first.append(error)
        finally:
            connections.close_all()

    reader, builder = threading.Thread(target=old_snapshot), threading.Thread(target=first_run_builds)
    reader.start()
    assert held.wait(10)
    builder.start()
    deadline = time.monotonic() + 10
    while _index_state(encoder.index_name) is None:  # the first build's index exists, invalid, from its first phase
        assert time.monotonic() < deadline, "the first build never started"
        time.sleep(0.05)
    waiting = services.embedding_run_create(corpus=big_corpus(4), encoder_name=settings.ENCODER_MODEL)
    assert waiting.mark_running()
    timer = threading.Timer(0.5, _cancel_from_another_connection, args=(waiting,))
    timer.start()
    with pytest.raises(services.RunStopped, match="while another run built"):  # its own cancel ends its wait
        services.encoder_index_ensure(encoder=encoder, run=waiting)
    timer.join()
    started = time.monotonic()
    threading.Timer(1.0, release.set).start()
    assert services.encoder_index_ensure(encoder=encoder) is False  # its turn came once the first had built it
    assert time.monotonic() - started >= 1.0
    reader.join(10)
    builder.join(10)
    assert first == [True]
    valid, definition = _index_state(encoder.index_name)
    assert valid is True and "hnsw" in definition
