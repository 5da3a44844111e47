"""Shared by the memory benches: the process's peak resident set size, sampled in a thread; the seconds its garbage
collector ran."""

from __future__ import annotations

import gc
import threading
import time

import psutil


class PeakRss:
    """``with PeakRss() as memory: ...`` then ``memory.peak`` (bytes); RSS keeps memory freed earlier, so it bounds from above.

    ``memory.phase(name)`` as each step begins: ``memory.phases[name]`` is then [RSS when the phase first began, its
    peak], so what a phase adds is told apart from what an earlier one left behind."""

    def __init__(self) -> None:
        self.process, self.peak, self.running = psutil.Process(), 0, True
        self.phases: dict[str, list[int]] = {}
        self.current: list[int] | None = None
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while self.running:
            rss = self.process.memory_info().rss
            self.peak = max(self.peak, rss)
            if self.current is not None:
                self.current[1] = max(self.current[1], rss)
            time.sleep(0.05)

    def phase(self, name: str) -> None:
        rss = self.process.memory_info().rss
        self.current = self.phases.setdefault(name, [rss, rss])
        self.current[1] = max(self.current[1], rss)

    def __enter__(self) -> PeakRss:
        self.peak = self.process.memory_info().rss
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.running = False
        self.thread.join()


class CollectorTime:
    """``with CollectorTime() as collector: ...`` then ``collector.seconds``: the time Python's cyclic garbage collector
    ran in this process meanwhile (every generation, summed through ``gc.callbacks``), and ``collector.full`` passes."""

    def __init__(self) -> None:
        self.seconds, self.full, self._began = 0.0, 0, 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._began
        self.full += info["generation"] == 2

    def __enter__(self) -> CollectorTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._callback)
