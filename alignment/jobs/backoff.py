"""Waits between restarts: 1, 2, 4 … seconds up to a maximum, back to 1 s once a run lasted a minute.

Shared by the worker that reconnects to a lost database (:mod:`alignment.jobs.worker`) and by
``manage.py runapp``, which starts a dead worker or web server again (:mod:`webapp.lib.supervisor`).
"""

from __future__ import annotations

FIRST_WAIT_SECONDS = 1.0
STEADY_AFTER_SECONDS = 60.0  # a worker that ran this long starts its next wait from FIRST_WAIT_SECONDS again


class Backoff:
    """Waits of 1, 2, 4 … seconds up to ``maximum``, back to 1 s after a run of STEADY_AFTER_SECONDS."""

    def __init__(self, maximum: float) -> None:
        self.maximum = max(FIRST_WAIT_SECONDS, maximum)
        self.next_wait = FIRST_WAIT_SECONDS
        self.restarts = 0

    def after_run(self, seconds_run: float) -> float:
        """The wait before the next start, given how long the last run lasted."""
        if seconds_run >= STEADY_AFTER_SECONDS:
            self.next_wait = FIRST_WAIT_SECONDS
        wait, self.next_wait = self.next_wait, min(self.next_wait * 2, self.maximum)
        self.restarts += 1
        return wait
