"""A large run's pairs in shards, each its own task, so that several workers (on several hosts) align one run.

The run's own task (service.alignment_run_execute) splits the pairs it has not stored into
:class:`~alignment.models.AlignmentShard` rows of ``ALIGN_SHARD_PAIRS`` pairs, queues one
``alignment.align_shard`` task per shard and ends, leaving the run running. Each shard aligns its
pairs the way an unsharded run does (service.align_pending: each pair stored in one transaction under
the run's row lock, huge pairs block by block, time slices, its own heartbeat and attempts), so the
run's counters add up across shards and a pair is never stored twice.

* The shard that finishes last marks the run succeeded and sends its signals (once).
* A failed shard fails the run; the others stop at their next pair (or block) and wait, queued.
* A cancel stops every shard at its next pair (or block); a run whose shards all wait is cancelled at once.
* A retry runs the run's task again: it queues the shards not done (each skips the pairs the run
  stored) and puts pairs no open shard covers (a pair flipped after its shard was done) into a new one.

Fair share: a shard takes its lane from the run's owner (``AlignmentShard.lane_user_id``), so one person's
run uses at most JOB_USER_CONCURRENCY workers at a time; a run without an owner (a command) uses every worker.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from alignment.aligning.embedding_wait import wait_for_embedding
from alignment.aligning.service import align_pending, run_finish, run_scorer
from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_once_on_commit
from alignment.jobs.models import Pickup, error_text
from alignment.jobs.slices import TimeSlice
from alignment.models import AlignmentRun, AlignmentShard
from alignment.signals import run_finished

SHARD_TASK = "alignment.align_shard"


def shards_start(run: AlignmentRun, pending_ids: list[int]) -> AlignmentRun:
    """Split ``pending_ids`` into shards (the first time; later only pairs no open shard covers) and queue the open ones."""
    size = max(1, int(settings.ALIGN_SHARD_PAIRS))
    with transaction.atomic():
        AlignmentRun.objects.select_for_update().get(pk=run.pk)
        shards = list(AlignmentShard.objects.filter(run=run).order_by("index"))
        open_shards = [shard for shard in shards if shard.status != AlignmentShard.Status.SUCCEEDED]
        covered = {pair_id for shard in open_shards for pair_id in shard.pair_ids}
        uncovered = [pair_id for pair_id in pending_ids if pair_id not in covered]
        first = shards[-1].index + 1 if shards else 0
        open_shards += AlignmentShard.objects.bulk_create(
            AlignmentShard(run=run, index=first + n, pair_ids=uncovered[start : start + size])
            for n, start in enumerate(range(0, len(uncovered), size))
        )
        for shard in open_shards:
            shard.mark_queued()  # a failed or cancelled shard is queued again; a waiting one stays as it is
            enqueue_once_on_commit(SHARD_TASK, shard, shard_id=shard.pk)
    if not open_shards:
        return run_finish(run)
    return AlignmentRun.objects.get(pk=run.pk)


def alignment_shard_execute(
    *, shard_id: int, build_measure: Callable, device: str = "", time_slice: TimeSlice | None = None
) -> AlignmentShard:
    """Align the shard's pairs that the run has not stored yet; the last shard done finishes the run."""
    shard = AlignmentShard.objects.select_related("run").get(pk=shard_id)
    run = shard.run
    if run.status != AlignmentRun.Status.RUNNING or run.cancel_requested:
        return _stop(run, shard)  # the run was cancelled, failed or finished while this task waited
    pickup = shard.pickup()
    if pickup is Pickup.SKIP:
        return shard
    if pickup is Pickup.GAVE_UP:
        _fail_run(run, f"shard {shard.index}: {shard.error}")
        return shard
    try:
        pending = run.pairs.filter(pk__in=shard.pair_ids).exclude(aligned_pairs__run_id=run.pk).order_by("pk")
        scorer = run_scorer(run, build_measure, device)
        wait_for_embedding(run, scorer, shard.pair_ids, time_slice, shard=True)
        if not align_pending(run, shard, pending, scorer, time_slice):
            return _stop(run, shard)
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the shard running: the task's retry resumes it
            shard.mark_failed(error_text(exc))
            _fail_run(run, f"shard {shard.index}: {error_text(exc)}")
        raise
    shard.mark_succeeded()
    with transaction.atomic():
        locked = AlignmentRun.objects.select_for_update().get(pk=run.pk)  # the last two shards may finish together
        last = not AlignmentShard.objects.filter(run=run).exclude(status=AlignmentShard.Status.SUCCEEDED).exists()
    if last:
        run_finish(locked)
    return AlignmentShard.objects.get(pk=shard_id)


def _stop(run: AlignmentRun, shard: AlignmentShard) -> AlignmentShard:
    """Leave the shard waiting (a retry continues it); a cancel asked for is carried out."""
    AlignmentShard.objects.filter(pk=shard.pk, status__in=[AlignmentShard.Status.RUNNING, AlignmentShard.Status.QUEUED]).update(
        status=AlignmentShard.Status.QUEUED
    )
    run.refresh_from_db(fields=["status", "cancel_requested"])
    if run.cancel_requested and run.mark_cancelled():
        run_finished.send(sender=AlignmentRun, run=run)
    return AlignmentShard.objects.get(pk=shard.pk)


def _fail_run(run: AlignmentRun, reason: str) -> None:
    if run.mark_failed(reason):
        run_finished.send(sender=AlignmentRun, run=AlignmentRun.objects.get(pk=run.pk))
