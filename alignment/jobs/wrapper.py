"""The one task wrapper: a thin Procrastinate task around a service call, for every job kind.

Sync tasks run on worker threads: each is treated like a request, so Django closes
(CONN_MAX_AGE) or drops broken connections before and after. What leaves the service decides
what happens to the job:

* :class:`~alignment.jobs.slices.SliceOver` (its time slice ran out between committed steps): the
  row goes back to ``queued`` and its continuation is deferred in the same transaction; one that waits for another
  job (:class:`~alignment.jobs.slices.WaitFor`) is deferred a few seconds later, at the lowest priority;
* a lost database (a restart, a dropped connection): nothing is marked, since nothing can be
  written and the job did nothing wrong; :class:`~alignment.jobs.database.DatabaseLost` makes
  Procrastinate retry the task JOB_DATABASE_RETRY_SECONDS later, and the retry finds the row
  still running and resumes or restarts it, as after a killed worker;
* its row gone (deleted, with its corpus, while the task waited in the queue): nothing is left to do, and the
  task ends with one log line instead of a traceback;
* any other exception marks the job failed with its reason (services usually did so already;
  the conditional update then changes nothing) and is re-raised so Procrastinate records it too.

Whatever the outcome, a user's shard that ends leaves the user's own lane filled from their spare lanes, if it would
run empty (:func:`~alignment.jobs.enqueue.spare_lane_promote`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import close_old_connections, transaction
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app

from alignment.jobs.database import DatabaseLost, database_lost
from alignment.jobs.enqueue import defer_in_transaction, spare_lane_promote
from alignment.jobs.models import Job
from alignment.jobs.slices import WAITING_PRIORITY, SliceOver, WaitFor

logger = logging.getLogger(__name__)


def job_task(
    *, name: str, queue: str, model: type[Job] | None = None, id_arg: str = "job_id", **task_options: Any
) -> Callable[[Callable[..., Any]], Any]:
    """Register ``func`` as the Procrastinate task ``name`` on ``queue``; ``model``/``id_arg`` name the row it runs."""

    def decorate(func: Callable[..., Any]) -> Any:
        @functools.wraps(func)
        def run(**kwargs: Any) -> Any:
            close_old_connections()
            lane = None
            try:
                lane = _spread_lane(model, kwargs.get(id_arg))  # in here: a lost database is retried as below
                return func(**kwargs)
            except SliceOver as over:
                if model is not None and id_arg in kwargs:
                    _continue_later(model, kwargs[id_arg], name, kwargs, _waiting_options(over))
                return None
            except Exception as exc:
                if database_lost(exc):
                    logger.warning("task %s(%s) lost the database (%s); it will be retried", name, kwargs, exc)
                    raise DatabaseLost(f"{type(exc).__name__}: {exc}") from exc
                if model is not None and id_arg in kwargs:
                    job = model._base_manager.filter(pk=kwargs[id_arg]).first()
                    if job is None and isinstance(exc, ObjectDoesNotExist):
                        logger.warning(
                            "task %s(%s): its %s was deleted while it waited; nothing to do", name, kwargs, model._meta.verbose_name
                        )
                        return None
                    if job is not None:
                        job.mark_failed_by(exc)
                raise
            finally:
                if lane is not None:
                    _refill_own_lane(*lane)
                close_old_connections()

        retry = RetryStrategy(
            max_attempts=settings.JOB_DATABASE_RETRIES, wait=settings.JOB_DATABASE_RETRY_SECONDS, retry_exceptions={DatabaseLost}
        )
        return app.task(name=name, queue=queue, retry=retry, **task_options)(run)

    return decorate


def _spread_lane(model: type[Job] | None, job_id: Any) -> tuple[int, int | None] | None:
    """(its user, this task) for a shard that may take its user's spare lanes, read as the task starts; None otherwise."""
    if model is None or not model.spreads or job_id is None or int(settings.JOB_USER_CONCURRENCY) <= 0:
        return None
    job = model._base_manager.filter(pk=job_id).first()
    user_id = job.lane_user_id if job is not None else None
    return None if user_id is None else (user_id, job.procrastinate_job_id)


def _refill_own_lane(user_id: int, ending_task: int | None) -> None:
    """As a shard's task ends: a shard waiting in a spare lane moves into the user's own lane if it runs empty
    (:func:`~alignment.jobs.enqueue.spare_lane_promote`). Its error is logged, never raised over the task's own."""
    try:
        spare_lane_promote(user_id, ending_task)
    except Exception as exc:  # a lost database: the task's own outcome is what counts
        logger.warning("could not move a shard of user %s into their own lane: %s", user_id, exc)


def _continue_later(model: type[Job], job_id: int, task_name: str, task_kwargs: dict[str, Any], options: dict[str, Any]) -> None:
    """Queue the job again behind what was queued meanwhile; a job cancelled in the meantime stays cancelled."""
    with transaction.atomic():
        job = model._base_manager.select_for_update().get(pk=job_id)
        if job.mark_yielded():
            defer_in_transaction(task_name, job, options=options, **task_kwargs)


def _waiting_options(over: SliceOver) -> dict[str, Any]:
    """Procrastinate options of a continuation: a job that waits (:class:`WaitFor`) comes back later, at the lowest priority."""
    if not isinstance(over, WaitFor):
        return {}
    return {"schedule_in": {"seconds": over.seconds}, "priority": WAITING_PRIORITY}
