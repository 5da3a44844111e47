"""A run of more than ALIGN_SHARD_PAIRS pairs is split into shards, each its own task, run by a real Procrastinate worker."""

from __future__ import annotations

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.aligning import scoring, shards
from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_cancel, alignment_run_create, alignment_run_execute, alignment_run_retry
from alignment.models import AlignedPair, AlignmentRun, AlignmentShard, CandidateAlignment, ParagraphAlignment
from alignment.signals import run_succeeded
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG


@pytest.fixture
def one_pair_shards(settings):
    settings.ALIGN_SHARD_PAIRS = 1  # the three stories make three shards
    return settings


def _statuses(run: AlignmentRun) -> list[str]:
    return list(AlignmentShard.objects.filter(run=run).order_by("index").values_list("status", flat=True))


def _candidates(run: AlignmentRun) -> set[tuple]:
    rows = CandidateAlignment.objects.filter(run=run).values_list("simple_sentence_id", "complex_sentence_id", "label", "score")
    return {(simple, complex_id, label, round(score, 6)) for simple, complex_id, label, score in rows}


def test_a_run_split_into_shards_aligns_every_pair_once_as_one_task_would(stories, run_worker, one_pair_shards):
    succeeded = []
    run_succeeded.connect(lambda sender, run, **kwargs: succeeded.append(run.pk), sender=AlignmentRun, weak=False, dispatch_uid="t")
    try:
        run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
        run_worker(["alignment"])
    finally:
        run_succeeded.disconnect(sender=AlignmentRun, dispatch_uid="t")
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 3
    assert [len(ids) for ids in AlignmentShard.objects.filter(run=run).values_list("pair_ids", flat=True)] == [1, 1, 1]
    assert _statuses(run) == ["succeeded"] * 3
    assert succeeded == [run.pk], "the last shard finishes the run and tells the listeners once"
    assert ProcrastinateJob.objects.filter(task_name="alignment.align_shard").count() == 3


def test_shards_store_what_one_task_stores(stories, run_worker, settings):
    settings.ALIGN_SHARD_PAIRS = 1
    sharded = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    settings.ALIGN_SHARD_PAIRS = 100
    whole = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    sharded.refresh_from_db(), whole.refresh_from_db()
    assert not AlignmentShard.objects.filter(run=whole).exists()
    assert _candidates(sharded) == _candidates(whole) != set()
    assert (sharded.label_counts, sharded.candidates_written, sharded.sentences_done) == (
        whole.label_counts, whole.candidates_written, whole.sentences_done,
    )  # fmt: skip


def test_a_failed_shard_fails_the_run_the_others_wait_and_a_retry_finishes_only_what_is_left(
    stories, run_worker, one_pair_shards, monkeypatch
):
    calls = {"count": 0}
    real_score = scoring.PairScorer.score

    def failing_second_pair(self, simple, complex_side):
        calls["count"] += 1
        if calls["count"] == 2:
            raise MemoryError("simulated out-of-memory in the second shard")
        return real_score(self, simple, complex_side)

    monkeypatch.setattr(scoring.PairScorer, "score", failing_second_pair)
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.FAILED
    assert run.error.startswith("shard 1: MemoryError: simulated out-of-memory"), run.error
    assert _statuses(run) == ["succeeded", "failed", "queued"], "the third shard found the run failed and did nothing"
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 1

    alignment_run_retry(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 3
    assert calls["count"] == 4  # 2 before the failure, the 2 pairs left after the retry
    assert _statuses(run) == ["succeeded"] * 3, "the retry reused the shards instead of making new ones"


def test_cancel_while_a_shard_runs_stops_the_rest_and_a_retry_resumes(stories, run_worker, one_pair_shards, monkeypatch):
    real_score = scoring.PairScorer.score

    def cancel_in_first(self, simple, complex_side):
        outcome = real_score(self, simple, complex_side)
        alignment_run_cancel(run=AlignmentRun.objects.get())
        return outcome

    monkeypatch.setattr(scoring.PairScorer, "score", cancel_in_first)
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and run.pairs_done == 1
    assert _statuses(run) == ["queued"] * 3 or _statuses(run) == ["succeeded", "queued", "queued"]
    monkeypatch.setattr(scoring.PairScorer, "score", real_score)
    alignment_run_retry(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED and run.pairs_done == 3


def test_a_run_whose_shards_all_wait_is_cancelled_at_once_and_a_retry_queues_no_second_task(stories, run_worker, one_pair_shards):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    ProcrastinateJob.objects.all().delete()  # this test plays the worker for the run's own task
    alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    waiting = ProcrastinateJob.objects.filter(task_name=shards.SHARD_TASK, status="todo")
    assert waiting.count() == 3 and AlignmentRun.objects.get(pk=run.pk).status == AlignmentRun.Status.RUNNING

    cancelled = alignment_run_cancel(run=run)
    assert cancelled.status == AlignmentRun.Status.CANCELLED  # at once: no worker had to see it
    alignment_run_retry(run=cancelled)
    alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert waiting.count() == 3, "a shard whose task still waits is not queued twice"
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 3


def test_a_pair_no_open_shard_covers_gets_a_new_shard_on_retry(stories, run_worker, one_pair_shards):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    first = AlignedPair.objects.filter(run=run).order_by("pair_id").first()
    for model in (AlignedPair, CandidateAlignment, ParagraphAlignment):  # as when a pair is flipped after its shard was done
        model.objects.filter(run=run, pair_id=first.pair_id).delete()
    AlignmentRun.objects.filter(pk=run.pk).update(status=AlignmentRun.Status.FAILED)
    alignment_run_retry(run=AlignmentRun.objects.get(pk=run.pk))
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert AlignedPair.objects.filter(run=run).count() == 3
    assert list(AlignmentShard.objects.filter(run=run).order_by("index").values_list("pair_ids", flat=True))[-1] == [first.pair_id]


def test_the_run_card_says_how_its_shards_stand(stories, run_worker, one_pair_shards, client, owner):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    ProcrastinateJob.objects.all().delete()
    alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    AlignmentShard.objects.filter(run=run, index=0).update(status=AlignmentShard.Status.SUCCEEDED)
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "3 shards: 1 done, 2 waiting" in page
