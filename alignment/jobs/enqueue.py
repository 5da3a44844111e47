"""Queue a job's task by its *name* once the transaction commits.

Services never import a tasks module (tasks import services, so that was a circle), and a
worker never sees a job whose rows are not committed yet. The Procrastinate job id is stored
on the row so the job card and the admin can find it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from alignment.jobs.models import Job


def defer(task_name: str, job: Job | None = None, *, options: dict | None = None, **task_kwargs: Any) -> int:
    """Defer ``task_name`` now (Procrastinate ``configure`` ``options``: lock, queueing_lock, schedule_in...)."""
    from procrastinate.contrib.django import app

    job_id = app.configure_task(task_name, allow_unknown=False, **(options or {})).defer(**task_kwargs)
    if job is not None:
        type(job)._base_manager.filter(pk=job.pk).update(procrastinate_job_id=job_id)
        job.procrastinate_job_id = job_id
    return job_id


def enqueue_on_commit(task_name: str, job: Job | None = None, *, options: dict | None = None, **task_kwargs: Any) -> None:
    """Defer ``task_name(**task_kwargs)`` when the current transaction commits (at once outside one)."""
    transaction.on_commit(partial(defer, task_name, job, options=options, **task_kwargs))
