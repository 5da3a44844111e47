"""An alignment run waits for its corpus's embedding run instead of encoding the same sentences itself.

An import queues both runs at once; with two workers the alignment used to encode every sentence the embedding run
was encoding at the same time (alignment/aligning/embedding_wait.py).
"""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment import services
from alignment.aligning.embedding_wait import embedding_to_wait_for, waiting_runs_wake
from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute, run_scorer
from alignment.jobs.enqueue import SPARE_PRIORITY, defer
from alignment.jobs.slices import WAITING_PRIORITY
from alignment.models import AlignmentRun, EmbeddingRun, SentenceEmbedding
from alignment.services import EMBED_TASK
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_queued_before_the_corpus_embedding_waits_for_it_and_encodes_nothing(six_pairs, run_worker, settings):
    settings.ALIGN_EMBEDDING_WAIT_SECONDS = 0  # one worker: the embedding runs in between, then the waiting run
    run = alignment_run_create(corpus=six_pairs)  # queued first, so the worker takes it first
    embedding = services.embedding_run_create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)
    run_worker()
    run.refresh_from_db(), embedding.refresh_from_db()
    assert embedding.status == EmbeddingRun.Status.SUCCEEDED, embedding.error
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == 6
    assert run.encoder_seconds == 0.0, "every vector came from the embedding run"
    assert run.slices == 1, "it gave its worker back once, to the embedding"
    assert run.waiting_for_id is None, "forgotten once it aligned"


def test_a_waiting_run_comes_back_later_below_every_priority_and_holds_back_nothing_of_its_lane(
    six_pairs, owner, client, run_worker, settings
):
    settings.JOB_USER_CONCURRENCY = 1  # every job of the owner in one lane (one Procrastinate lock)
    embedding = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL, created_by=owner)  # its task later
    run = alignment_run_create(corpus=six_pairs, created_by=owner)
    run_worker()
    run.refresh_from_db()
    assert (run.status, run.yielded, run.waiting_for_id, run.pairs_done) == (AlignmentRun.Status.QUEUED, True, embedding.pk, 0)
    task = ProcrastinateJob.objects.get(task_name="alignment.align_pairs", status="todo")
    assert (task.priority, task.lock) == (WAITING_PRIORITY, f"user-{owner.pk}-0")
    assert task.scheduled_at > timezone.now() + timedelta(seconds=settings.ALIGN_EMBEDDING_WAIT_SECONDS - 2)
    client.force_login(owner)
    page = html.unescape(client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode())
    assert "waiting for the corpus's embedding, so that no sentence is encoded twice" in page

    defer(EMBED_TASK, embedding, run_id=embedding.pk)  # in the same lane, after the waiting run's task
    run_worker()  # the embedding, then the alignment, brought forward by the embedding's end
    embedding.refresh_from_db(), run.refresh_from_db()
    assert embedding.status == EmbeddingRun.Status.SUCCEEDED, "the waiting run, earlier in the lane, held it back"
    assert run.status == AlignmentRun.Status.SUCCEEDED, "brought forward when the embedding run finished, not 30 s later"
    assert (run.encoder_seconds, run.waiting_for_id, run.slices) == (0.0, None, 1)
    page = html.unescape(client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode())
    assert "waiting for the corpus" not in page


def test_a_run_waits_only_for_vectors_its_pairs_lack_from_an_embedding_run_still_to_come(six_pairs, run_worker, settings):
    pairs = list(six_pairs.pairs.order_by("pk"))
    bulk = alignment_run_create(corpus=six_pairs)
    few = alignment_run_create(corpus=six_pairs, pairs=pairs[:5])
    lexical = alignment_run_create(corpus=six_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    embedding = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)
    ids = [pair.pk for pair in pairs]

    def waits_for(run: AlignmentRun, pair_ids: list[int] = ids) -> EmbeddingRun | None:
        return embedding_to_wait_for(run, run_scorer(run, run_measure, ""), pair_ids)

    assert waits_for(bulk) == embedding
    assert waits_for(few, ids[:5]) is None, "someone waits at a page for a run of a few pairs: it encodes them itself"
    assert waits_for(lexical) is None, "lexical measures read no vector"
    embedding.mark_cancelled()
    assert waits_for(bulk) is None, "a cancelled embedding run stores nothing more"

    done = services.embedding_run_create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)
    run_worker(["embedding"])
    done.refresh_from_db()
    assert done.status == EmbeddingRun.Status.SUCCEEDED
    another = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)  # for documents added later
    assert waits_for(bulk) is None, "every sentence of its pairs has a vector"
    assert another.status == EmbeddingRun.Status.QUEUED


def test_a_run_waits_no_longer_for_an_embedding_run_that_shows_no_progress(six_pairs, run_worker, settings):
    embedding = services.embedding_run_create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)  # its task on `embedding`
    run = alignment_run_create(corpus=six_pairs)
    waits_for = lambda: embedding_to_wait_for(run, run_scorer(run, run_measure, ""), list(six_pairs.pairs.values_list("pk", flat=True)))  # noqa: E731
    limit = timedelta(seconds=settings.ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS)
    assert waits_for() == embedding, "queued just now"
    EmbeddingRun.objects.filter(pk=embedding.pk).update(created_at=timezone.now() - limit - timedelta(seconds=5))
    assert waits_for() is None, "queued longer than the limit and never started: no worker takes its queue"
    EmbeddingRun.objects.filter(pk=embedding.pk).update(heartbeat_at=timezone.now() - limit + timedelta(seconds=30))
    assert waits_for() == embedding, "it stored a batch within the limit"
    EmbeddingRun.objects.filter(pk=embedding.pk).update(heartbeat_at=timezone.now() - limit - timedelta(seconds=5))
    assert waits_for() is None, "nothing stored for longer than the limit: its worker is gone"

    run_worker(["alignment"])  # no worker takes the embedding queue
    run.refresh_from_db(), embedding.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert (run.pairs_done, run.slices, run.waiting_for_id) == (6, 0, None)
    assert run.encoder_seconds > 0, "it encoded what it lacked itself"
    assert embedding.status == EmbeddingRun.Status.QUEUED, "left to a worker of its queue, which stores only what is still missing"


def test_the_shards_of_a_run_wait_and_go_on_by_themselves_once_the_embedding_run_is_cancelled(
    six_pairs, owner, client, run_worker, settings
):
    settings.ALIGN_SHARD_PAIRS = 3  # two shards
    settings.JOB_SPARE_LANES = 1  # the second one in the owner's spare lane
    embedding = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL, status=EmbeddingRun.Status.RUNNING)
    run = alignment_run_create(corpus=six_pairs, created_by=owner)
    run_worker()
    run.refresh_from_db()
    assert (run.status, run.waiting_for_id, run.pairs_done) == (AlignmentRun.Status.RUNNING, embedding.pk, 0)
    assert sorted(run.shards.values_list("status", "yielded")) == [(AlignmentRun.Status.QUEUED, True)] * 2
    client.force_login(owner)
    page = html.unescape(client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode())
    assert "All 2 of its shards are waiting for the corpus's embedding, so that no sentence is encoded twice." in page

    embedding.mark_cancelled()  # it will store no more vectors: the shards, brought forward, encode what is missing themselves
    woken = ProcrastinateJob.objects.filter(task_name="alignment.align_shard", status="todo", scheduled_at__lte=timezone.now())
    woken = woken.order_by("id").values_list("lock", "priority")
    assert list(woken) == [(f"user-{owner.pk}-0", 0), (f"user-{owner.pk}-spare-0", SPARE_PRIORITY)], "their lanes' priorities again"
    run_worker()
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == 6 and run.encoder_seconds > 0
    assert run.waiting_for_id is None


def test_a_waiting_shard_is_brought_forward_though_another_shard_of_its_run_went_on_meanwhile(
    six_pairs, owner, client, run_worker, settings
):
    settings.ALIGN_SHARD_PAIRS = 3  # two shards: the first one's pairs lack their vectors, the second one's have them
    full = services.embedding_run_create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)
    run_worker(["embedding"])
    full.refresh_from_db()
    assert full.status == EmbeddingRun.Status.SUCCEEDED
    first = list(six_pairs.pairs.order_by("pk"))[:3]
    documents = [document for pair in first for document in (pair.complex_document_id, pair.simple_document_id)]
    SentenceEmbedding.objects.filter(sentence__document_id__in=documents).delete()  # sentences imported since, say
    embedding = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL, status=EmbeddingRun.Status.RUNNING)
    run = alignment_run_create(corpus=six_pairs)
    run_worker(["alignment"])  # the first shard waits, the second one aligns
    run.refresh_from_db()
    assert sorted(run.shards.values_list("index", "status")) == [(0, "queued"), (1, "succeeded")]
    client.force_login(owner)
    url = reverse("alignment:alignment_run_detail", args=[run.pk])
    line = "1 of its 2 shards is waiting for the corpus's embedding, so that no sentence is encoded twice; the others go on meanwhile."
    assert line in html.unescape(client.get(url).content.decode()), "the shard that went on is not counted as waiting"

    embedding.mark_succeeded()  # its end brings the waiting shard forward
    waiting = ProcrastinateJob.objects.get(task_name="alignment.align_shard", status="todo")
    assert waiting.scheduled_at <= timezone.now() and waiting.priority == 0, "not left to its next look, 30 s later"
    assert "waiting for the corpus's embedding" not in html.unescape(client.get(url).content.decode())


def test_the_cards_line_ends_once_no_shard_waits_though_the_embedding_run_goes_on(six_pairs, owner, client, run_worker, settings):
    settings.ALIGN_SHARD_PAIRS = 3  # two shards, both waiting
    embedding = EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL, status=EmbeddingRun.Status.RUNNING)
    run = alignment_run_create(corpus=six_pairs, created_by=owner)
    run_worker(["alignment"])
    client.force_login(owner)
    url = reverse("alignment:alignment_run_detail", args=[run.pk])
    assert "All 2 of its shards are waiting" in html.unescape(client.get(url).content.decode())
    assert waiting_runs_wake(embedding.pk) == 2  # its two shards, brought forward (as once every vector is stored)
    run.refresh_from_db()
    assert run.waiting_for_id == embedding.pk, "the record stands while the embedding run goes on"
    assert "waiting for the corpus's embedding" not in html.unescape(client.get(url).content.decode())


@pytest.mark.parametrize("shard_sentences", [10, 100_000], ids=["in shards", "in one task"])
def test_a_waiting_run_goes_on_once_every_vector_is_stored_not_after_the_index_build(
    six_pairs, run_worker, settings, monkeypatch, shard_sentences
):
    from alignment import embedding_shards

    # In shards, the last one builds the encoder's index and ends the run; in one task, the run's own task does.
    settings.EMBEDDING_SHARD_SENTENCES = shard_sentences
    run = alignment_run_create(corpus=six_pairs)  # queued first: it waits
    embedding = services.embedding_run_create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)
    seen = []
    build = embedding_shards.encoder_index_ensure

    def index_build(**kwargs):  # the real build, after a look at the waiting run's task
        task = ProcrastinateJob.objects.get(pk=AlignmentRun.objects.get(pk=run.pk).procrastinate_job_id)
        seen.append((task.status, task.priority, task.scheduled_at <= timezone.now()))
        return build(**kwargs)

    monkeypatch.setattr(embedding_shards, "encoder_index_ensure", index_build)
    monkeypatch.setattr(services, "encoder_index_ensure", index_build)
    run_worker()
    run.refresh_from_db(), embedding.refresh_from_db()
    assert seen == [("todo", 0, True)], "brought forward before the index build, at bulk work's priority"
    assert (embedding.status, run.status, run.encoder_seconds) == ("succeeded", "succeeded", 0.0)


def test_a_run_started_outside_a_worker_runs_to_its_end_without_waiting(six_pairs, settings):
    EmbeddingRun.objects.create(corpus=six_pairs, encoder_name=settings.ENCODER_MODEL)  # queued, never run here
    run = alignment_run_create(corpus=six_pairs)
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)  # as `manage.py align --now` runs it: no time slice
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == 6 and run.encoder_seconds > 0 and run.waiting_for_id is None
