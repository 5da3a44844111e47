"""The search index a worker process keeps between the shards of one mining job, and lets go of once it is idle.

A worker keeps the index it built or read for a job (faiss over a MUSS job's sequences, the MUSS paper's IVF index
past memory, an LHA job's target documents) so that the job's next shards on this worker do not build it again. It
kept it until a shard of another job replaced it: a worker left idle after a job, or one that only ran the job's
prepare (on ``MINING_PREPARE_QUEUE``), held the whole index for as long as it lived, about 1.6 GB a million 384-d
vectors with faiss.

Now an index nobody asked for during ``MINING_WORKER_INDEX_IDLE_SECONDS`` is let go of (a timer thread, armed while an
index is held), and at once when its job finishes or is cancelled on this worker. A shard still using it keeps its
own reference; the job's next shard on this worker reads or builds it again. One :class:`WorkerIndex` per kind of
index, each holding one job's: the key's first element is the job's id.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings

T = TypeVar("T")

_ALL: list[WorkerIndex] = []


class WorkerIndex(Generic[T]):
    """One job's index at a time, kept for this worker's next shards of the job while they keep coming."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: tuple[tuple[Hashable, ...], T] | None = None
        self._used = 0.0
        self._timer: threading.Timer | None = None
        _ALL.append(self)

    def get(self, key: tuple[Hashable, ...], build: Callable[[], T | None]) -> T | None:
        """The index kept for ``key`` (job id first), else the one ``build`` makes, kept (None is not kept). Several
        shards of one job running at once on this worker build it once: the others wait for it."""
        with self._lock:
            if self._held is not None and self._held[0] == key:
                self._used = time.monotonic()
                return self._held[1]
            self._drop()  # the previous job's index let go before this one's vectors are read
            index = build()
            if index is not None:
                self._hold(key, index)
            return index

    def keep(self, key: tuple[Hashable, ...], index: T) -> None:
        """Keep ``index`` for ``key`` (a prepare that built it, for the shards this worker may run)."""
        with self._lock:
            self._drop()
            self._hold(key, index)

    def held(self) -> tuple[Hashable, ...] | None:
        """The key of the index kept now (None: none)."""
        with self._lock:
            return self._held[0] if self._held is not None else None

    def release(self, job_id: int) -> None:
        """Let go of the index now if it is ``job_id``'s."""
        with self._lock:
            if self._held is not None and self._held[0][0] == job_id:
                self._drop()

    def _hold(self, key: tuple[Hashable, ...], index: T) -> None:
        self._held, self._used = (key, index), time.monotonic()
        self._arm(_idle_seconds())

    def _arm(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._held is None:
                return
            idle = time.monotonic() - self._used
            if idle >= _idle_seconds():
                self._drop()
            else:  # asked for since the timer was armed: look again when it will have been idle long enough
                self._arm(_idle_seconds() - idle)

    def _drop(self) -> None:
        self._held = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _idle_seconds() -> float:
    return float(settings.MINING_WORKER_INDEX_IDLE_SECONDS)


def worker_indexes_release(job_id: int) -> None:
    """Let go of every index this worker keeps for ``job_id`` (the job finished or was cancelled here)."""
    for index in _ALL:
        index.release(job_id)
