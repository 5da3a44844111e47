"""``manage.py procrastinate``: Procrastinate's own command, with a worker that survives the database.

This command shadows Procrastinate's (``alignment`` comes before ``procrastinate.contrib.django``
in INSTALLED_APPS, and Django takes a command from the first app that has it). Every subcommand
but ``worker`` is Procrastinate's, unchanged; ``worker`` takes the same options and runs
:func:`alignment.jobs.worker.worker_run_supervised`, which starts the worker again when it loses
the database instead of exiting (README, "Deploying for a team").
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.conf import settings
from procrastinate.contrib.django import app, django_connector
from procrastinate.contrib.django.management.commands.procrastinate import Command as ProcrastinateCommand

from alignment.jobs.worker import worker_run_supervised


class Command(ProcrastinateCommand):
    help = "Procrastinate's commands; `worker` reconnects to the database instead of exiting when it is lost."

    def handle(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("command") != "worker":
            return super().handle(*args, **kwargs)
        options = {key: value for key, value in kwargs.items() if key not in self._django_options and key not in ("command", "func")}
        queues = options.get("queues")
        self.stderr.write(
            f"Launching a worker on {', '.join(queues) if queues else 'all queues'} (it reconnects when the database is lost)"
        )
        _warm_up(queues)
        # As Procrastinate's command does: a worker needs a pooled async connector (LISTEN/NOTIFY), not Django's.
        pooled = isinstance(app.connector, django_connector.DjangoConnector)
        with app.replace_connector(app.connector.get_worker_connector()) if pooled else contextlib.nullcontext(app) as worker_app:
            asyncio.run(worker_run_supervised(worker_app, worker_options=options, max_wait_seconds=settings.WORKER_RECONNECT_MAX_SECONDS))
        return None


def _warm_up(queues: list[str] | None) -> None:
    """Import before the first job what a worker's jobs import anyway: the aligner (torch, about 1.3 s of CPU) for a
    worker on the alignment queue, so a user's first run there does not wait for it (the first shard of a 1,000-pair
    run paid it: 25.7-26.4 s against 26.6-29.4 s, bench/corpus_scale.py's kept database). A worker on other queues only
    (embedding, mining) does not import torch here."""
    if not queues or "alignment" in queues:
        import models_ml.aligning.aligner  # noqa: F401
