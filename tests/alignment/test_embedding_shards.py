"""An embedding run with more than EMBEDDING_SHARD_SENTENCES sentences to embed is split into shards, each its own task."""

from __future__ import annotations

import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from procrastinate.contrib.django.models import ProcrastinateJob

import alignment.aligning.measures
from alignment import services
from alignment.aligning.measures import app_encoder
from alignment.embedding_shards import SHARD_TASK
from alignment.models import EmbeddingRun, EmbeddingShard, Encoder, SentenceEmbedding
from tests.alignment.test_embedding_job import FailingAfterBatches, retry_recording

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def small_shards(settings):
    settings.EMBEDDING_SHARD_SENTENCES = 16  # 40 sentences: shards of 16, 16 and the open-ended rest
    settings.EMBEDDING_BATCH_SIZE = 8
    return settings


def _statuses(run: EmbeddingRun) -> list[str]:
    return list(EmbeddingShard.objects.filter(run=run).order_by("index").values_list("status", flat=True))


def test_shards_embed_every_sentence_once_and_the_last_builds_the_index(big_corpus, run_worker, small_shards):
    corpus = big_corpus(40)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert run.embedded_sentences == run.total_sentences == 40
    ranges = list(EmbeddingShard.objects.filter(run=run).order_by("index").values_list("after_id", "through_id"))
    assert len(ranges) == 3 and ranges[-1][1] is None and all(a < b for a, b in ranges[:-1])
    assert _statuses(run) == ["succeeded"] * 3
    assert ProcrastinateJob.objects.filter(task_name=SHARD_TASK).count() == 3
    embeddings = SentenceEmbedding.objects.filter(sentence__document__corpus=corpus)
    assert embeddings.count() == embeddings.values("sentence").distinct().count() == 40
    reference = app_encoder(settings.ENCODER_MODEL).encode([embeddings.first().sentence.text])[0]
    assert np.allclose(np.asarray(embeddings.first().vector, dtype=np.float32), reference, atol=1e-4)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [embeddings.first().encoder.index_name])
        assert cursor.fetchone() is not None


def test_a_failed_shard_fails_the_run_and_a_retry_embeds_only_what_is_left(big_corpus, run_worker, small_shards, monkeypatch):
    corpus = big_corpus(40)
    failing = FailingAfterBatches(fail_on=3)  # shard 0 embeds 2 batches of 8, shard 1 fails on its first
    monkeypatch.setattr(alignment.aligning.measures, "load_sentence_encoder", lambda name, **kw: failing)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.FAILED
    assert run.error.startswith("shard 1: MemoryError"), run.error
    assert _statuses(run)[:2] == ["succeeded", "failed"] and _statuses(run)[2] in ("queued", "succeeded")
    stored = set(SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).values_list("sentence__text", flat=True))
    assert stored == set(failing.encoded)

    recording = retry_recording(run, run_worker, monkeypatch)
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert run.embedded_sentences == run.total_sentences == 40
    assert not stored & set(recording.encoded), "the retry re-encoded sentences that were already stored"
    assert len(stored) + len(recording.encoded) == 40
    assert _statuses(run) == ["succeeded"] * 3, "the retry reused the shards"


def test_the_runs_own_task_splits_into_shards_without_loading_the_encoder(big_corpus, run_worker, small_shards):
    corpus = big_corpus(40)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)

    def no_load(name):
        raise AssertionError("the run's task loaded the encoder")  # seconds per worker process, for nothing

    run = services.embedding_run_execute(run_id=run.pk, load_encoder=no_load, batch_size=8)
    assert run.status == EmbeddingRun.Status.RUNNING and run.total_sentences == 40 and run.embedded_sentences == 0
    assert _statuses(run) == ["queued"] * 3
    run_worker()  # the shards load it, register the encoder and embed every sentence
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.SUCCEEDED, run.error
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == 40


def test_a_sharded_run_whose_encoder_gives_another_dimension_fails_naming_both(big_corpus, run_worker, small_shards):
    corpus = big_corpus(40)
    Encoder.objects.create(name=settings.ENCODER_MODEL, dimensions=7)  # registered by another model of that name
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db()
    assert run.status == EmbeddingRun.Status.FAILED
    assert "registered with 7 dimensions, the model gives 384" in run.error, run.error
    assert not SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).exists()
