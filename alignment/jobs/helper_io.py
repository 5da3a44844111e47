"""A job's database work on one helper thread with its own connection, so that its round trips overlap the job's
computing on the other core: an alignment run reads pairs ahead and stores them behind
(:mod:`alignment.aligning.pipeline`), an LHA shard reads its next batch ahead and stores the last one behind
(:mod:`alignment.mining.lha_shard`), and an LHA prepare averages one corpus's document vectors while the other's
are averaged here (:func:`at_once`, :mod:`alignment.mining.document_vectors`).

Work handed over runs in the order given. An error on the helper is raised on the job's thread by the next call that
waits for it or hands it work. Inside a transaction (a test that is rolled back afterwards), a second connection would
not see the caller's rows: there everything runs on the caller's connection, inline and in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from django.db import connection, connections

T = TypeVar("T")  # a batch
R = TypeVar("R")  # what reading it gave
W = TypeVar("W")  # what working on it made, to store


class RunIO:
    """A job's reads and writes, run in the order given on one helper thread (or inline in a transaction)."""

    def __init__(self) -> None:
        self.threaded = not connection.in_atomic_block
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="job-io") if self.threaded else None
        self._unwatched: list[Future] = []

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """Run ``fn`` after what was handed over before it; its Future. Inline, it has run (and raised) already."""
        self.raise_failed()
        if self._pool is None:
            done: Future = Future()
            done.set_result(fn(*args, **kwargs))
            return done
        return self._pool.submit(fn, *args, **kwargs)

    def later(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """``fn`` that nobody waits for (a heartbeat); an error of it is raised by the next call to this object."""
        self._unwatched.append(self.submit(fn, *args, **kwargs))

    def raise_failed(self) -> None:
        finished = [future for future in self._unwatched if future.done()]
        self._unwatched = [future for future in self._unwatched if not future.done()]
        for future in finished:
            future.result()

    def close(self) -> None:
        """Finish what was handed over (reads ahead, a batch being stored), close the helper's connection, stop it."""
        if self._pool is not None:
            self._pool.submit(connections.close_all)  # runs on the helper: closes its own connection
            self._pool.shutdown(wait=True)
            self._pool = None


def run_overlapped(
    io: RunIO,
    batches: Iterator[T],
    read: Callable[[T], R],
    work: Callable[[T, R], W],
    store: Callable[[T, W], None],
    cancelled: Callable[[], bool],
) -> bool:
    """Work through ``batches`` here while ``io``'s helper reads the next one ahead (``read``) and stores the last one
    behind (``store``, given what ``work`` made of it): at most one batch read ahead and one being stored. A cancel is
    looked for before each batch; False when it stopped for one. Either way, and on an error here, the batch being
    stored is finished first (an error of the helper's is raised here by the next wait for it)."""
    storing: Future | None = None
    upcoming = next(batches, None)
    reading = io.submit(read, upcoming) if upcoming is not None else None
    while upcoming is not None and reading is not None:
        if cancelled():
            break
        batch, read_result = upcoming, reading.result()
        upcoming = next(batches, None)
        reading = io.submit(read, upcoming) if upcoming is not None else None
        result = work(batch, read_result)
        if storing is not None:
            storing.result()  # one batch stored behind at most
        storing = io.submit(store, batch, result)
    if storing is not None:
        storing.result()
    return upcoming is None


def at_once(io: RunIO, calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` at the same time on two connections: the first on ``io``'s helper, the others here, in order; their
    results in order. An error here waits for the helper's call to end, then is raised; the helper's error is raised
    after the calls here have ended. (Inside a transaction the helper's call runs first, inline.) A single call runs
    here: the helper would only make it wait for a thread and a connection."""
    if len(calls) < 2:
        return [call() for call in calls]
    helper = io.submit(calls[0])
    try:
        here = [call() for call in calls[1:]]
    except BaseException:
        wait([helper])
        raise
    return [helper.result(), *here]
