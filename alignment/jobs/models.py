"""The job base every background job row inherits: status, attempts, heartbeat, error, timestamps.

Every state change is one ``UPDATE ... WHERE status IN (...)`` that returns whether it won, so
a worker, a cancel request and the stalled-job sweep can race without one undoing another:
a cancelled job is never marked succeeded, a succeeded one never failed.

When a worker dies mid-job (SIGKILL, out of memory, lost machine) the stalled-job sweep
requeues its Procrastinate job, and the task finds its row still "running".
:meth:`Job.pickup` decides what happens then, per kind: a ``resumable`` kind continues from
its committed progress, any other kind restarts from scratch (the caller removes the dead
attempt's staging files), and after ``JOB_MAX_ATTEMPTS`` the job fails with a reason, so no
job stays "running" forever.
"""

from __future__ import annotations

import enum
import time
from typing import Any, ClassVar

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from alignment.jobs.database import commit_without_flush, database_lost


class JobStatus(models.TextChoices):
    """The states of every job kind; stored strings are the ones the kinds used before they shared a base."""

    QUEUED = "queued"
    PENDING = "pending", "pending (waiting for its next attempt)"  # webhook deliveries between attempts
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.PENDING, JobStatus.RUNNING)
FINISHED_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class Pickup(enum.Enum):
    """What a task should do with its row when it starts (see :meth:`Job.pickup`)."""

    FRESH = "fresh"  # queued: first run
    RESUME = "resume"  # found running (its worker died): continue from the committed progress
    CONTINUE = "continue"  # queued again after its time slice (alignment/jobs/slices.py): continue, the same attempt
    RESTART = "restart"  # found running, not resumable: drop the dead attempt's files, run from scratch
    GAVE_UP = "gave_up"  # found running after the last allowed attempt: marked failed, clean up
    SKIP = "skip"  # finished or cancelled meanwhile: nothing to do


def max_attempts() -> int:
    return int(getattr(settings, "JOB_MAX_ATTEMPTS", 3))


class Job(models.Model):
    """Abstract base of a background job's row. A new kind is a subclass plus a task, nothing more."""

    Status = JobStatus
    kind: ClassVar[str] = "job"  # shown on the job card
    resumable: ClassVar[bool] = True  # whether a requeued task may continue from the committed progress
    retries_itself: ClassVar[bool] = False  # attempts count the kind's own retries (a webhook's sends), not worker restarts
    spreads: ClassVar[bool] = False  # a shard of a run (with an ``index``): may take its user's spare lanes (enqueue.py)

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0, help_text="Times a worker started this job (a requeue after a crash counts).")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last progress the worker reported.")
    error = models.TextField(blank=True)
    procrastinate_job_id = models.BigIntegerField(null=True, blank=True)
    yielded = models.BooleanField(
        default=False, help_text="Queued again after giving its worker to other jobs (a time slice): its next start continues it."
    )
    slices = models.PositiveIntegerField(default=0, help_text="Times it gave its worker to other jobs and queued itself again.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def lane_user_id(self) -> int | None:
        """Whose job this is, for the per-user bound on running jobs (alignment/jobs/enqueue.py); None: nobody's."""
        return getattr(self, "created_by_id", None)

    @property
    def queue_priority(self) -> int:
        """Procrastinate priority (higher runs first): small interactive jobs go before bulk work."""
        return 0

    def waiting_note(self) -> str:
        """What this job waits for before it can go on, in words (its card says it); "" when nothing but a worker."""
        return ""

    def _transition(self, from_statuses: tuple[str, ...], **values: Any) -> bool:
        """One conditional UPDATE; on success the changed fields are re-read into ``self``."""
        won = type(self)._base_manager.filter(pk=self.pk, status__in=from_statuses).update(**values) > 0
        if won:
            computed = [name for name, value in values.items() if hasattr(value, "resolve_expression")]  # F(), Case(), ...
            for name, value in values.items():
                if name not in computed:
                    setattr(self, name, value)
            if computed:
                self.refresh_from_db(fields=computed)
        return won

    def mark_running(self, *, from_statuses: tuple[str, ...] = (JobStatus.QUEUED,)) -> bool:
        """Start (or restart) an attempt: attempts + 1, heartbeat now; the first start time is kept."""
        now = timezone.now()
        attempt = Case(When(yielded=True, then=Value(0)), default=Value(1))  # a continuation is the same attempt
        return self._transition(
            from_statuses, status=JobStatus.RUNNING, attempts=F("attempts") + attempt, started_at=Coalesce(F("started_at"), now),
            heartbeat_at=now, error="", finished_at=None, yielded=False,
        )  # fmt: skip

    def heartbeat(self, *, every: float = 0.0, step_delay: bool = True, **progress: Any) -> bool:
        """Record progress (any fields) and that the worker is alive; False once the job is no longer running.

        JOB_TEST_STEP_DELAY_MS (a test hook, 0 in use) sleeps after each beat so a test can kill a worker mid-job.
        A beat's commit does not wait for the WAL flush (a job beats after every pair or batch, and the flush cost
        about as much as storing a small pair): a beat lost to a database crash only makes the job look older, and
        progress is only ever behind what is stored, since WAL is replayed in order.
        ``every`` (seconds, without progress fields): skip the write when this object beat less than that long ago
        and answer True (a job of many small steps beat after each, a round trip as long as a tenth of its step);
        the test hook still sleeps after every step. ``step_delay=False``: the caller sleeps it itself
        (:meth:`step_delay`), as a job whose beats are written by a helper thread does.
        """
        now = time.monotonic()
        if every > 0 and not progress and now - getattr(self, "_beaten_at", -every) < every:
            if step_delay:
                self.step_delay()
            return True
        self._beaten_at = now
        if connection.in_atomic_block:  # the caller's transaction decides its own commit
            alive = self._transition((JobStatus.RUNNING,), heartbeat_at=timezone.now(), **progress)
        else:
            with transaction.atomic():
                commit_without_flush()
                alive = self._transition((JobStatus.RUNNING,), heartbeat_at=timezone.now(), **progress)
        if step_delay:
            self.step_delay()
        return alive

    @staticmethod
    def step_delay() -> None:
        """The test hook's pause after a step (JOB_TEST_STEP_DELAY_MS; none in use)."""
        delay = int(getattr(settings, "JOB_TEST_STEP_DELAY_MS", 0))
        if delay > 0:
            time.sleep(delay / 1000)

    def mark_succeeded(self, **fields: Any) -> bool:
        return self._transition((JobStatus.RUNNING,), status=JobStatus.SUCCEEDED, finished_at=timezone.now(), **fields)

    def mark_failed(self, reason: str, **fields: Any) -> bool:
        return self._transition(ACTIVE_STATUSES, status=JobStatus.FAILED, error=reason, finished_at=timezone.now(), **fields)

    def mark_failed_by(self, exc: BaseException, **fields: Any) -> bool:
        """Fail with ``exc``'s reason, unless ``exc`` is a lost database: then the job did nothing wrong and stays
        running, so the task's retry (alignment/jobs/wrapper.py) resumes it as after a killed worker."""
        if database_lost(exc):
            return False
        return self.mark_failed(error_text(exc), **fields)

    def mark_cancelled(self, **fields: Any) -> bool:
        return self._transition(ACTIVE_STATUSES, status=JobStatus.CANCELLED, finished_at=timezone.now(), **fields)

    def mark_yielded(self) -> bool:
        """Give the worker back between two committed steps (alignment/jobs/slices.py): queued again, progress kept."""
        return self._transition((JobStatus.RUNNING,), status=JobStatus.QUEUED, yielded=True, slices=F("slices") + 1)

    def mark_queued(self, **fields: Any) -> bool:
        """Queue a failed or cancelled job again (a retry); its attempts count on."""
        return self._transition((JobStatus.FAILED, JobStatus.CANCELLED), status=JobStatus.QUEUED, error="", finished_at=None, **fields)

    def pickup(self) -> Pickup:
        """Claim the job when its task starts, and say how to run it (see the module docstring)."""
        self.refresh_from_db(fields=["status", "attempts", "yielded"])
        if self.status == JobStatus.QUEUED:
            continues = self.yielded
            if not self.mark_running():
                return Pickup.SKIP
            return Pickup.CONTINUE if continues else Pickup.FRESH
        if self.status != JobStatus.RUNNING:
            return Pickup.SKIP
        limit = max_attempts()
        if self.attempts >= limit:
            reason = f"the worker running this job stopped (attempt {self.attempts} of {limit})"
            return Pickup.GAVE_UP if self.mark_failed(reason) else Pickup.SKIP
        if not self.mark_running(from_statuses=(JobStatus.RUNNING,)):
            return Pickup.SKIP
        return Pickup.RESUME if self.resumable else Pickup.RESTART


def shard_summary(shards: models.QuerySet) -> str:
    """ "4 shards: 1 done, 2 running, 1 waiting" for a job split into shards; "" when it is not."""
    counts = dict(shards.values_list("status").annotate(n=models.Count("pk")).values_list("status", "n"))
    if not counts:
        return ""
    words = {JobStatus.SUCCEEDED: "done", JobStatus.RUNNING: "running", JobStatus.QUEUED: "waiting", JobStatus.FAILED: "failed"}
    parts = [f"{counts[status]} {word}" for status, word in words.items() if counts.get(status)]
    return f"{sum(counts.values())} shards: {', '.join(parts)}"


def error_text(exc: BaseException) -> str:
    """The reason stored on a failed job: the exception's type and message, never a traceback."""
    return f"{type(exc).__name__}: {exc}"
