"""Queue a job's task by its *name*, with its lane and priority, once the transaction commits.

Services never import a tasks module (tasks import services, so that was a circle), and a
worker never sees a job whose rows are not committed yet. The Procrastinate job id is stored
on the row so the job card and the admin can find it.

**Fair share.** One person's heavy work must not hold every worker. Each job of a user runs in one
of that user's JOB_USER_CONCURRENCY *lanes*: a Procrastinate ``lock`` named ``user-<id>-<lane>``
(jobs that share a lock never run at the same time, and run in order). A new job takes the lane
with the fewest of the user's waiting and running jobs, so a user never has more than
JOB_USER_CONCURRENCY jobs running, however many workers are free, and the other workers stay
free for everyone else. Jobs without a user (commands, the demo, webhooks) take no lane.
**Spare lanes.** The shards of one user's run (embedding, alignment) also use workers nobody else needs: they are
spread over the user's lanes and ``JOB_SPARE_LANES`` spare ones (8), round robin by their index, so that one user's
run takes up to that many more workers than fair share gives it. A shard in a spare lane (``user-<id>-spare-<k>``) waits at
:data:`SPARE_PRIORITY`, below every job's own priority, so that any other job queued meanwhile goes first, in its own
lane; and when one of the user's own lanes runs empty, the task that ends there moves the oldest shard waiting in a
spare lane into it (:func:`spare_lane_promote`), so that the user keeps the workers fair share gives them while
other people's work fills the rest. On two workers a user's import then uses both when nobody else queues anything.
(A fixed number, not the workers alive when a shard is queued: workers that start together with queued work register
one after the other, and the first shards were spread over one lane.)
**Priority**: a kind's :attr:`~alignment.jobs.models.Job.queue_priority` (higher first), so a
one-pair alignment does not wait behind a queue of bulk work.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from alignment.jobs.models import Job


def _own_lanes(user_id: int) -> list[str]:
    """The user's JOB_USER_CONCURRENCY lanes (at least one), by their Procrastinate lock."""
    return [f"user-{user_id}-{lane}" for lane in range(max(1, int(settings.JOB_USER_CONCURRENCY)))]


def lane_lock(user_id: int) -> str:
    """The least busy of the user's lanes (its Procrastinate lock), counting their waiting and running jobs."""
    names = _own_lanes(user_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lock, count(*) FROM procrastinate_jobs WHERE lock = ANY(%s) AND status IN ('todo', 'doing') GROUP BY lock",
            [names],
        )
        busy = dict(cursor.fetchall())
    return min(names, key=lambda name: (busy.get(name, 0), name))


SPARE_PRIORITY = -1  # a shard in a spare lane: after every job's own priority (0 for bulk work), before a waiting task's
BULK_PRIORITY = 0  # a bulk job's own priority (AlignmentRun.queue_priority beyond INTERACTIVE_PAIRS, every shard's)


def _spare_prefix(user_id: int) -> str:
    return f"user-{user_id}-spare-"


SPARE_LANES_LIKE = "user-%-spare-%"  # every user's spare lanes, as a LIKE pattern


def spare_lane(user_id: int, index: int) -> str | None:
    """The spare lane of a user's shard number ``index`` (round robin over the own lanes and the spare ones); None
    when its turn falls on one of the user's own lanes."""
    own = len(_own_lanes(user_id))
    turn = index % (own + max(0, int(settings.JOB_SPARE_LANES)))
    return f"{_spare_prefix(user_id)}{turn - own}" if turn >= own else None


def queue_options(job: Job | None, options: dict | None) -> dict:
    """Procrastinate ``configure`` options for ``job``: its lane and priority, unless ``options`` name their own. A
    shard (a kind that ``spreads``) may take a spare lane, at :data:`SPARE_PRIORITY` at most."""
    chosen = dict(options or {})
    if job is None:
        return chosen
    user_id = job.lane_user_id if "lock" not in chosen and int(settings.JOB_USER_CONCURRENCY) > 0 else None
    if user_id is not None:
        spare = spare_lane(user_id, int(job.index)) if job.spreads else None
        chosen["lock"] = spare or lane_lock(user_id)
        if spare:
            chosen["priority"] = min(chosen.get("priority", job.queue_priority), SPARE_PRIORITY)
    chosen.setdefault("priority", job.queue_priority)
    return chosen


def spare_lane_promote(user_id: int, ending_task: int | None) -> int:
    """For each of the user's own lanes that holds no task but ``ending_task`` (the one that ends now), move the oldest
    shard of the user's that waits in a spare lane into it, at bulk priority: a user whose own lanes ran empty keeps
    their fair share while other people's jobs go before the spare lanes. The number of tasks moved."""
    own = _own_lanes(user_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT lock FROM procrastinate_jobs WHERE lock = ANY(%s) AND status IN ('todo', 'doing') AND id <> %s",
            [own, ending_task or 0],
        )
        busy = {row[0] for row in cursor.fetchall()}
        moved = 0
        for lane in [name for name in own if name not in busy]:
            cursor.execute(
                "UPDATE procrastinate_jobs SET lock = %s, priority = %s WHERE id = (SELECT id FROM procrastinate_jobs "
                "WHERE lock LIKE %s AND status = 'todo' AND priority = %s AND (scheduled_at IS NULL OR scheduled_at <= now()) "
                "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)",
                [lane, BULK_PRIORITY, f"{_spare_prefix(user_id)}%", SPARE_PRIORITY],
            )
            moved += cursor.rowcount
    return moved


def defer(task_name: str, job: Job | None = None, *, options: dict | None = None, **task_kwargs: Any) -> int:
    """Defer ``task_name`` now (Procrastinate ``configure`` ``options``: lock, queueing_lock, schedule_in...)."""
    from procrastinate.contrib.django import app

    job_id = app.configure_task(task_name, allow_unknown=False, **queue_options(job, options)).defer(**task_kwargs)
    if job is not None:
        type(job)._base_manager.filter(pk=job.pk).update(procrastinate_job_id=job_id)
        job.procrastinate_job_id = job_id
    return job_id


def defer_unless_waiting(
    task_name: str, lock: str, job: Job | None = None, *, options: dict | None = None, in_transaction: bool = False, **task_kwargs: Any
) -> None:
    """Defer ``task_name`` now under the Procrastinate lock and queueing lock ``lock`` (one runs at a time, one waits at
    most), unless a task with that queueing lock waits already. A savepoint: the refused insert must not abort the
    caller's transaction. ``in_transaction``: through Django's connection, committed with the caller's transaction
    (:func:`defer_in_transaction`), as a task's continuation must be."""
    from procrastinate.exceptions import AlreadyEnqueued

    chosen = {**(options or {}), "lock": lock, "queueing_lock": lock}
    try:
        with transaction.atomic():
            if in_transaction:
                defer_in_transaction(task_name, job, options=chosen, **task_kwargs)
            else:
                defer(task_name, job, options=chosen, **task_kwargs)
    except AlreadyEnqueued:
        pass


def waiting_or_running(lock: str) -> bool:
    """Whether a task deferred by :func:`defer_unless_waiting` under ``lock`` waits or runs now, one asked to stop
    (:func:`stop_waiting_or_running`) not counted (one query, by the indexes Procrastinate keeps on its locks)."""
    from procrastinate.contrib.django.models import ProcrastinateJob

    running = Q(lock=lock, status="doing", abort_requested=False)
    return ProcrastinateJob.objects.filter(Q(queueing_lock=lock, status="todo") | running).exists()


def stop_waiting_or_running(lock: str) -> int:
    """Cancel the task that waits under ``lock`` (:func:`defer_unless_waiting`) and ask the one that runs to stop
    (Procrastinate's abort request, which the task reads with :func:`stop_asked`), in the caller's transaction; the
    number of tasks cancelled or asked."""
    from procrastinate.contrib.django.django_connector import DjangoConnector
    from procrastinate.contrib.django.models import ProcrastinateJob
    from procrastinate.manager import JobManager

    manager = JobManager(DjangoConnector())
    tasks = ProcrastinateJob.objects.filter(lock=lock, status__in=["todo", "doing"]).values_list("id", flat=True)
    return sum(manager.cancel_job_by_id(job_id, abort=True) for job_id in tasks)


def stop_asked(lock: str) -> bool:
    """Whether the task running under ``lock`` was asked to stop (:func:`stop_waiting_or_running`); one query."""
    from procrastinate.contrib.django.models import ProcrastinateJob

    return ProcrastinateJob.objects.filter(lock=lock, status="doing", abort_requested=True).exists()


def defer_in_transaction(task_name: str, job: Job | None, *, options: dict | None = None, **task_kwargs: Any) -> int:
    """Defer through Django's own connection, inside the caller's transaction: the job row and its task commit together.

    A worker's app talks to the database through its own connection pool, so a plain :func:`defer`
    from a task would commit on its own; a continuation must not exist without its row's change.
    """
    from procrastinate.contrib.django import app
    from procrastinate.contrib.django.django_connector import DjangoConnector
    from procrastinate.jobs import JobDeferrer
    from procrastinate.manager import JobManager

    assert connection.in_atomic_block, "defer_in_transaction needs the caller's transaction"
    configured = app.configure_task(task_name, allow_unknown=False, **queue_options(job, options))
    job_id = JobDeferrer(job_manager=JobManager(DjangoConnector()), job=configured.job).defer(**task_kwargs)
    if job is not None:
        type(job)._base_manager.filter(pk=job.pk).update(procrastinate_job_id=job_id)
        job.procrastinate_job_id = job_id
    return job_id


def enqueue_on_commit(task_name: str, job: Job | None = None, *, options: dict | None = None, **task_kwargs: Any) -> None:
    """Defer ``task_name(**task_kwargs)`` when the current transaction commits (at once outside one)."""
    transaction.on_commit(partial(defer, task_name, job, options=options, **task_kwargs))


def enqueue_once_on_commit(task_name: str, job: Job, **task_kwargs: Any) -> None:
    """Like :func:`enqueue_on_commit`, unless a task of ``job`` already waits (a retry while an old one is still
    queued): a Procrastinate queueing lock per job row, so a shard is never queued twice."""

    def defer_once() -> None:
        from procrastinate.exceptions import AlreadyEnqueued

        with contextlib.suppress(AlreadyEnqueued):
            defer(task_name, job, options={"queueing_lock": f"{task_name}-{job.pk}"}, **task_kwargs)

    transaction.on_commit(defer_once)
