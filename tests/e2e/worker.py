"""The real Procrastinate worker for browser tests: run in its own thread until the queues it serves are empty."""

from __future__ import annotations

import threading

from procrastinate.contrib.django import app


def _run_worker_until_idle(queues: list[str]) -> None:
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=queues, wait=False, install_signal_handlers=False, listen_notify=False)


def work(queues: list[str]) -> None:
    """Run the worker on ``queues`` until they are empty (at most 300 s)."""
    worker = threading.Thread(target=_run_worker_until_idle, args=(queues,))
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive()
