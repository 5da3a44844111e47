"""Spare lanes: one user's sharded run also uses the workers nobody else needs, and yields them to anyone's job.

With one lane a user (``JOB_USER_CONCURRENCY``, the default), a person's import ran on one worker however many were
idle: 300 imported pairs took 104 s on two workers against 67-100 s for the same jobs without a user
(docs/benchmarks.md). A run's shards now also wait in the user's spare lanes, below everyone's priority
(alignment/jobs/enqueue.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.aligning.service import alignment_run_create
from alignment.aligning.shards import shards_start
from alignment.jobs.enqueue import SPARE_PRIORITY, spare_lane_promote
from alignment.models import AlignmentRun, AlignmentShard
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG, wait_with_workers, worker_processes
from tests.markers import process_level

pytestmark = pytest.mark.django_db(transaction=True)


def _shard_tasks(run: AlignmentRun) -> list[tuple[int, str | None, int]]:
    """(index, lock, priority) of each shard's task, by index."""
    tasks = {task.pk: task for task in ProcrastinateJob.objects.filter(task_name="alignment.align_shard")}
    shards = AlignmentShard.objects.filter(run=run).order_by("index")
    return [(shard.index, tasks[shard.procrastinate_job_id].lock, tasks[shard.procrastinate_job_id].priority) for shard in shards]


def _split(corpus, created_by, settings) -> AlignmentRun:
    settings.ALIGN_SHARD_PAIRS = 1  # a shard a pair
    run = alignment_run_create(corpus=corpus, aligner_config=TFIDF_CONFIG, measures=LEXICAL, created_by=created_by)
    run = shards_start(run, list(corpus.pairs.order_by("pk").values_list("pk", flat=True)))
    ProcrastinateJob.objects.filter(task_name="alignment.align_pairs").update(status="succeeded")  # as its worker, which split it
    return run


def test_a_users_shards_take_their_lane_and_a_spare_one_in_turn_below_everyones_priority(six_pairs, owner, settings) -> None:
    settings.JOB_SPARE_LANES = 1
    run = _split(six_pairs, owner, settings)
    own, spare = f"user-{owner.pk}-0", f"user-{owner.pk}-spare-0"
    assert _shard_tasks(run) == [
        (0, own, 0), (1, spare, SPARE_PRIORITY), (2, own, 0), (3, spare, SPARE_PRIORITY), (4, own, 0), (5, spare, SPARE_PRIORITY),
    ]  # fmt: skip
    assert SPARE_PRIORITY < 0, "below bulk work's own priority: anyone's job queued later goes first"


def test_spare_lanes_follow_the_setting_and_a_run_without_a_user_takes_no_lane(six_pairs, owner, settings) -> None:
    settings.JOB_SPARE_LANES = 2
    run = _split(six_pairs, owner, settings)
    assert [lock for _, lock, _ in _shard_tasks(run)] == [
        f"user-{owner.pk}-0", f"user-{owner.pk}-spare-0", f"user-{owner.pk}-spare-1",
    ] * 2  # fmt: skip

    settings.JOB_SPARE_LANES = 0  # one user's run on their own lanes only, as before spare lanes
    ProcrastinateJob.objects.all().delete()
    run = _split(six_pairs, owner, settings)
    assert {(lock, priority) for _, lock, priority in _shard_tasks(run)} == {(f"user-{owner.pk}-0", 0)}

    settings.JOB_SPARE_LANES = 8  # the default
    nobody = _split(six_pairs, None, settings)
    assert {(lock, priority) for _, lock, priority in _shard_tasks(nobody)} == {(None, 0)}, "a command's run uses every worker anyway"


def test_a_shard_moves_from_a_spare_lane_into_the_users_own_once_that_runs_empty(six_pairs, owner, settings) -> None:
    settings.JOB_SPARE_LANES = 1
    run = _split(six_pairs, owner, settings)
    own = f"user-{owner.pk}-0"
    assert spare_lane_promote(owner.pk, None) == 0, "the own lane still holds shards 0, 2 and 4"

    tasks = {index: task for index, task in zip(range(6), AlignmentShard.objects.filter(run=run).order_by("index"))}
    ProcrastinateJob.objects.filter(pk__in=[tasks[i].procrastinate_job_id for i in (0, 2)]).update(status="succeeded")
    ProcrastinateJob.objects.filter(pk=tasks[4].procrastinate_job_id).update(status="doing")
    assert spare_lane_promote(owner.pk, None) == 0, "shard 4 runs in the own lane"
    assert spare_lane_promote(owner.pk, tasks[4].procrastinate_job_id) == 1, "shard 4 ends: the lane would run empty"
    assert _shard_tasks(run)[1] == (1, own, 0), "the oldest spare shard, at bulk priority in the user's own lane"
    assert spare_lane_promote(owner.pk, tasks[4].procrastinate_job_id) == 0, "the own lane holds shard 1 now"
    assert [lock for _, lock, _ in _shard_tasks(run)][3:] == [f"user-{owner.pk}-spare-0", own, f"user-{owner.pk}-spare-0"]


@pytest.mark.parametrize(
    ("value", "says"), [("two", "JOB_SPARE_LANES='two' is not an integer"), ("-1", "JOB_SPARE_LANES=-1: a number of lanes")]
)
def test_a_bad_spare_lanes_setting_stops_the_settings_naming_it(value, says) -> None:
    env = {**os.environ, "JOB_SPARE_LANES": value, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = subprocess.run([sys.executable, "-c", "import webapp.settings"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and says in result.stderr


@process_level
def test_on_two_workers_a_users_run_uses_both_and_another_users_run_queued_later_goes_before_its_spare_shards(
    six_pairs, owner, worker_subprocess_env, tmp_path
) -> None:
    bruno = get_user_model().objects.create_user("bruno", password="bruno-pass-123")
    env = {**worker_subprocess_env, "JOB_TEST_STEP_DELAY_MS": "1500", "LOG_LEVEL": "WARNING", "ALIGN_SHARD_PAIRS": "1"}
    env.pop("JOB_SPARE_LANES", None)  # the default
    with worker_processes(env, tmp_path, "spare-worker") as workers:
        run = alignment_run_create(corpus=six_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL, created_by=owner)
        wait_with_workers(
            "two of the owner's shards at once", lambda: _shards(run, "running") == 2, workers, timeout=90
        )  # one lane a user before
        other = alignment_run_create(corpus=six_pairs, aligner_config=TFIDF_CONFIG, measures=LEXICAL, created_by=bruno)
        wait_with_workers("the other user's run", lambda: AlignmentRun.objects.get(pk=other.pk).started_at is not None, workers, timeout=90)
        assert _shards(run, "queued") > 0, "it started on the first worker free, before the owner's remaining shards"
        wait_with_workers(
            "both runs", lambda: not AlignmentRun.objects.filter(status__in=["queued", "running"]).exists(), workers, timeout=90
        )
        assert set(AlignmentRun.objects.values_list("status", flat=True)) == {"succeeded"}


def _shards(run: AlignmentRun, status: str) -> int:
    return AlignmentShard.objects.filter(run=run, status=status).count()
