"""The one task wrapper: a thin Procrastinate task around a service call, for every job kind.

Sync tasks run on worker threads: each is treated like a request, so Django closes
(CONN_MAX_AGE) or drops broken connections before and after. An exception that escapes the
service marks the job failed with its reason (services usually did so already; the
conditional update then changes nothing) and is re-raised so Procrastinate records it too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections
from procrastinate.contrib.django import app

from alignment.jobs.models import Job, error_text


def job_task(
    *, name: str, queue: str, model: type[Job] | None = None, id_arg: str = "job_id", **task_options: Any
) -> Callable[[Callable[..., Any]], Any]:
    """Register ``func`` as the Procrastinate task ``name`` on ``queue``; ``model``/``id_arg`` name the row it runs."""

    def decorate(func: Callable[..., Any]) -> Any:
        @functools.wraps(func)
        def run(**kwargs: Any) -> Any:
            close_old_connections()
            try:
                return func(**kwargs)
            except Exception as exc:
                if model is not None and id_arg in kwargs:
                    job = model._base_manager.filter(pk=kwargs[id_arg]).first()
                    if job is not None:
                        job.mark_failed(error_text(exc))
                raise
            finally:
                close_old_connections()

        return app.task(name=name, queue=queue, **task_options)(run)

    return decorate
