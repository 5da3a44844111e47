"""Procrastinate worker processes for a bench: started on a queue, stopped when a job has finished, their peak memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from _django import REPO_ROOT, database_url


def run_workers(
    queue: str, count: int, job, threads: int, poll: Callable[[], None] | None = None, entry: str = "manage.py", env: dict | None = None
) -> tuple[float, list[float]]:
    """``count`` worker processes on ``queue`` until ``job`` (a run row) has finished; (wall seconds, each one's peak RSS in MB).

    The workers wait for work rather than stopping at an empty queue: a run's own task queues its shards, and a
    second worker must not stop before they exist. Each may run every shard of the bench owner's run
    (JOB_USER_CONCURRENCY = workers) on ``threads`` threads. ``poll``: called every half second while the job runs.
    ``entry``: the script run as ``manage.py`` (``bench/_standin_worker.py``: one that also loads the stand-in
    encoder); ``env``: more environment for the workers.
    """
    from django.conf import settings

    env = {
        **os.environ, "DATABASE_URL": database_url(), "ENCODER_CACHE_DIR": str(settings.ENCODER_CACHE_DIR), "LOG_LEVEL": "WARNING",
        "JOB_USER_CONCURRENCY": str(count), "ENCODER_THREADS": str(threads), **(env or {}),
    }  # fmt: skip
    started = time.perf_counter()
    command = [sys.executable, entry, "procrastinate", "worker", "--queues", queue, "--concurrency", "1"]
    workers = [subprocess.Popen(command, env=env, cwd=REPO_ROOT) for _ in range(count)]
    try:
        while type(job).objects.filter(pk=job.pk, status__in=["queued", "running"]).exists():
            if any(worker.poll() is not None for worker in workers):
                raise SystemExit(f"a worker on {queue} stopped while the job ran")
            if poll is not None:
                poll()
            time.sleep(0.5)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
    wall = time.perf_counter() - started
    peaks = []
    for worker in workers:
        _, _, usage = os.wait4(worker.pid, 0)
        peaks.append(usage.ru_maxrss / 1024)
    return wall, peaks
