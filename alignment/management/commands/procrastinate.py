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
        # As Procrastinate's command does: a worker needs a pooled async connector (LISTEN/NOTIFY), not Django's.
        pooled = isinstance(app.connector, django_connector.DjangoConnector)
        with app.replace_connector(app.connector.get_worker_connector()) if pooled else contextlib.nullcontext(app) as worker_app:
            asyncio.run(worker_run_supervised(worker_app, worker_options=options, max_wait_seconds=settings.WORKER_RECONNECT_MAX_SECONDS))
        return None
