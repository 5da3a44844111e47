"""What the queue looks like from outside: are workers alive, and why has this job not started?

Procrastinate keeps a heartbeat per worker (``procrastinate_workers``, every 10 s) and a row per
queued job. ``/readyz`` (webapp/health.py) reads :func:`workers_alive`; every job card reads
:func:`job_wait_note`, so a job that nobody picks up says why, in words, instead of waiting
silently ("No worker is running: start one with …").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils import timezone

from alignment.jobs.models import Job, JobStatus

START_COMMAND = "python manage.py procrastinate worker"


@dataclass(frozen=True)
class WorkerPresence:
    """Workers whose heartbeat is at most ``max_age_seconds`` old, and the newest heartbeat of any worker."""

    alive: int
    newest_heartbeat: datetime | None
    max_age_seconds: int


def workers_alive(*, max_age_seconds: int | None = None) -> WorkerPresence:
    max_age = int(settings.WORKER_HEARTBEAT_MAX_AGE if max_age_seconds is None else max_age_seconds)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE last_heartbeat >= now() - make_interval(secs => %s)), max(last_heartbeat) "
            "FROM procrastinate_workers",
            [max_age],
        )
        alive, newest = cursor.fetchone()
    return WorkerPresence(alive=alive, newest_heartbeat=newest, max_age_seconds=max_age)


@dataclass(frozen=True)
class _QueuedTask:
    queue: str
    lock: str | None
    waited_seconds: float
    ahead: int  # jobs of its queue that a worker takes first
    lane_busy: bool  # another job of the same user's lane is running


def _queued_task(procrastinate_job_id: int) -> _QueuedTask | None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT j.queue_name, j.lock,
                   extract(epoch FROM now() - coalesce((SELECT max(e.at) FROM procrastinate_events e
                                                        WHERE e.job_id = j.id AND e.type IN ('deferred', 'deferred_for_retry')),
                                                       now())),
                   (SELECT count(*) FROM procrastinate_jobs o
                     WHERE o.queue_name = j.queue_name AND o.status = 'todo'
                       AND (o.priority > j.priority OR (o.priority = j.priority AND o.id < j.id))),
                   EXISTS (SELECT 1 FROM procrastinate_jobs o WHERE j.lock IS NOT NULL AND o.lock = j.lock AND o.status = 'doing')
            FROM procrastinate_jobs j WHERE j.id = %s AND j.status = 'todo'
            """,
            [procrastinate_job_id],
        )
        row = cursor.fetchone()
    return _QueuedTask(*row) if row else None


@dataclass(frozen=True)
class JobWait:
    """What a queued job's card says: ``text``, then ``command`` (how to start a worker, when that is the answer)."""

    text: str
    command: str = ""
    urgent: bool = False  # nothing will happen until someone acts


def job_wait(job: Job) -> JobWait | None:
    """Why a queued job has not started: plain words at first, the reason once it waited JOB_WAIT_NOTE_SECONDS; None unless queued."""
    if job.status != JobStatus.QUEUED:
        return None
    note = job.waiting_note() if job.yielded else ""  # it gave its worker back to wait for another job
    if job.yielded:
        default = JobWait(note or "waiting for its turn: it gave its worker to other jobs and continues where it stopped")
    else:
        default = JobWait("waiting for a worker")
    task = _queued_task(job.procrastinate_job_id) if job.procrastinate_job_id else None
    if task is None or task.waited_seconds < settings.JOB_WAIT_NOTE_SECONDS:
        return default
    presence = workers_alive()
    if not presence.alive:
        seen = (
            f" (the last one was seen {timezone.localtime(presence.newest_heartbeat):%Y-%m-%d %H:%M})" if presence.newest_heartbeat else ""
        )
        return JobWait(f"No worker is running{seen}, so this job cannot start. Start one with", START_COMMAND, urgent=True)
    if note:
        return default
    waited = f"Queued {_seconds(task.waited_seconds)} ago"
    workers = f"{presence.alive} worker{'s' if presence.alive != 1 else ''} running"
    if task.lane_busy:
        return JobWait(f"{waited}: waiting for another of your jobs to finish (one person runs {settings.JOB_USER_CONCURRENCY} at a time).")
    if task.ahead:
        return JobWait(f"{waited}: {task.ahead} job{'s' if task.ahead != 1 else ''} ahead of it in the queue '{task.queue}', {workers}.")
    return JobWait(
        f"{waited}: {workers}, all busy or none taking the queue '{task.queue}'. To add one for it:",
        f"{START_COMMAND} --queues {task.queue}",
    )


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
