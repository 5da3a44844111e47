"""Shared by the memory benches: the process's peak resident set size, sampled in a thread."""

from __future__ import annotations

import threading
import time

import psutil


class PeakRss:
    """``with PeakRss() as memory: ...`` then ``memory.peak`` (bytes); RSS keeps memory freed earlier, so it bounds from above."""

    def __init__(self) -> None:
        self.process, self.peak, self.running = psutil.Process(), 0, True
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.05)

    def __enter__(self) -> PeakRss:
        self.peak = self.process.memory_info().rss
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.running = False
        self.thread.join()
