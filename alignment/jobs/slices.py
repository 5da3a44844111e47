"""Time slices: a long job gives its worker back every JOB_SLICE_SECONDS, so other people's jobs get a turn.

One upload of 5 MB used to hold the only worker for minutes of splitting and then minutes of
embedding, while everyone else's import, alignment, training and export waited. The kinds whose
work is a sequence of committed steps (an import's files, an embedding run's batches, an alignment
run's pairs) take a :class:`TimeSlice` from their task and, between two steps, raise
:class:`SliceOver` once it has run out. The task wrapper then puts the job back in the queue
(status ``queued``, ``yielded``) and defers its continuation in the same transaction; the
continuation is a new Procrastinate job, so it runs after the jobs queued meanwhile, and its
:meth:`~alignment.jobs.models.Job.pickup` resumes from the committed progress without counting an
attempt. Work started outside a worker (``manage.py align --now``, the demo) passes no slice and
runs to the end. Training and export are single steps and keep their worker until they finish.
"""

from __future__ import annotations

import time

from django.conf import settings


class SliceOver(BaseException):
    """The job's time slice ran out between two committed steps: it continues later, in a new task.

    A BaseException, as KeyboardInterrupt is: services catch ``Exception`` to mark their job failed,
    and a job that gives its worker back has not failed.
    """


class WaitFor(SliceOver):
    """The job should not run yet (an alignment run waits for its corpus's embedding run,
    :mod:`alignment.aligning.embedding_wait`): it gives its worker back like a slice that ran out, and its continuation
    is queued ``seconds`` later at :data:`WAITING_PRIORITY`, below every job's own priority, so that in its owner's
    lane (a Procrastinate lock, which runs a higher priority first) it holds back none of the jobs it waits for."""

    def __init__(self, seconds: float, reason: str) -> None:
        super().__init__(reason)
        self.seconds = seconds


WAITING_PRIORITY = -2  # below every kind's queue_priority (0 for bulk work, more for a page someone waits at) and spare lanes' (-1)


class TimeSlice:
    """How long a task may keep its worker: :meth:`over` once ``seconds`` have passed (never when 0)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    @classmethod
    def from_settings(cls) -> TimeSlice:
        return cls(settings.JOB_SLICE_SECONDS)

    def over(self) -> bool:
        return self.seconds > 0 and time.monotonic() - self.started >= self.seconds

    def check(self) -> None:
        """Raise :class:`SliceOver` when the slice has run out; call it only where the job's progress is committed."""
        if self.over():
            raise SliceOver


def slice_check(time_slice: TimeSlice | None) -> None:
    """:meth:`TimeSlice.check` for services that run with a slice (in a worker) or without one (to the end)."""
    if time_slice is not None:
        time_slice.check()
