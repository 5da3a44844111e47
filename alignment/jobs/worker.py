"""A Procrastinate worker that outlives the database: it reconnects with backoff instead of exiting.

Procrastinate's own worker stops for good when it loses the database (a restart, a failover, a
network blip): its heartbeat, its LISTEN connection or its next fetch raises, the worker shuts
down, and every job then waits in the queue until a person notices. ``manage.py procrastinate
worker`` runs :func:`worker_run_supervised` instead (``alignment/management/commands/procrastinate.py``):
the same worker, started again in the same process whenever it stops without being asked to,
after a wait that doubles from 1 s to ``WORKER_RECONNECT_MAX_SECONDS`` (reset once a worker has
run a minute), with one log line per attempt. Ctrl-C or SIGTERM stops it gracefully (jobs in
flight finish); a second signal stops it at once.

Jobs in flight when the database went away are retried as after a kill (:mod:`alignment.jobs.wrapper`):
their task is retried by Procrastinate, or, when even that could not be recorded, the stalled-job sweep
requeues it once the lost worker's heartbeat is older than ``STALLED_JOB_SECONDS``; either way the job
row's :meth:`~alignment.jobs.models.Job.pickup` resumes or restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from typing import Any

from alignment.jobs.backoff import Backoff
from alignment.jobs.database import database_lost

logger = logging.getLogger(__name__)


async def worker_run_supervised(app: Any, *, worker_options: dict[str, Any], max_wait_seconds: float) -> None:
    """Run ``app``'s worker until a stop signal, starting it again whenever it stops on its own.

    ``worker_options`` are ``App.run_worker_async``'s (queues, concurrency, name, wait …); with
    ``wait=False`` (drain the queue, then stop) a worker that finishes cleanly is not restarted.
    """
    stop = asyncio.Event()
    _stop_on_signals(stop)
    backoff = Backoff(max_wait_seconds)
    options = {**worker_options, "install_signal_handlers": False}
    queues = options.get("queues")
    while not stop.is_set():
        started = time.monotonic()
        reason = await _run_once(app, options, stop)
        if stop.is_set() or (reason is None and options.get("wait") is False):
            return
        wait = backoff.after_run(time.monotonic() - started)
        logger.warning(
            "worker on %s stopped (%s); starting it again in %.0f s (restart %d)",
            ", ".join(queues) if queues else "all queues", reason or "it stopped on its own", wait, backoff.restarts,
        )  # fmt: skip
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=wait)


async def _run_once(app: Any, options: dict[str, Any], stop: asyncio.Event) -> str | None:
    """One worker's life: open the connection pool, run until it stops. Returns why it stopped (None: cleanly)."""
    try:
        async with app.open_async():
            worker = asyncio.create_task(app.run_worker_async(**options), name="worker")
            stopping = asyncio.create_task(stop.wait(), name="stop signal")
            await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if stop.is_set() and not worker.done():
                worker.cancel()  # Procrastinate stops gracefully on cancellation: jobs in flight finish
            with contextlib.suppress(asyncio.CancelledError):
                await worker
    except Exception as exc:  # a lost database above all, but any crash: the supervisor's job is to start it again
        kind = "lost the database" if database_lost(exc) else "crashed"
        return f"{kind}: {type(exc).__name__}: {exc}".strip().rstrip(":")
    return None


def _stop_on_signals(stop: asyncio.Event) -> None:
    """First SIGINT/SIGTERM: a graceful stop; the handlers are then removed, so a second one ends the process."""
    loop = asyncio.get_running_loop()

    def first_signal() -> None:
        logger.warning("stopping the worker (jobs in flight finish; a second Ctrl-C stops at once)")
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, first_signal)
