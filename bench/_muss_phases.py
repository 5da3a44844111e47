"""Seconds per step of a MUSS job run in-process, by wrapping the functions ``muss_service`` calls.

Steps: prepare's sequence building (``_stream_sequences``), encoding (the encoder given to prepare),
the pgvector HNSW build (``search_prepare``; nothing with faiss) and the rest of prepare (storing the
rows, creating the shards); the neighbours search (``nearest_sequences``) inside the neighbours phase;
the ACCESS attributes (``access_attributes``) inside the pairs phase. The wrappers add two
``perf_counter`` calls per call, well under a microsecond against the milliseconds they time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator

from alignment.mining import muss_service

TIMED = {"index": "search_prepare", "search": "nearest_sequences", "access": "access_attributes"}


class PhaseClock:
    """``with PhaseClock() as clock: ...``: ``clock.seconds[step]`` for sequences, encode, index, search, access."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.saved: dict[str, object] = {}

    def timed(self, step: str, function: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[step] += time.perf_counter() - started

        return wrapper

    def timed_iterator(self, function: Callable[..., Iterator]) -> Callable[..., Iterator]:
        def wrapper(*args, **kwargs):
            iterator = iter(function(*args, **kwargs))
            while True:
                started = time.perf_counter()
                try:
                    item = next(iterator)
                except StopIteration:
                    return
                finally:
                    self.seconds["sequences"] += time.perf_counter() - started
                yield item

        return wrapper

    def encoder(self, encode: Callable) -> Callable:
        return self.timed("encode", encode)

    def __enter__(self) -> PhaseClock:
        for step, name in TIMED.items():
            self.saved[name] = getattr(muss_service, name)
            setattr(muss_service, name, self.timed(step, self.saved[name]))
        self.saved["_stream_sequences"] = muss_service._stream_sequences
        muss_service._stream_sequences = self.timed_iterator(muss_service._stream_sequences)
        return self

    def __exit__(self, *exc) -> None:
        for name, function in self.saved.items():
            setattr(muss_service, name, function)

    def report(self, prepare: float, phases: dict[str, float], sequences: int) -> str:
        """One line: prepare's split, each phase with its timed step, sequences/s of the shards and end to end."""
        s = self.seconds
        neighbours, pairs = phases.get("neighbours", 0.0), phases.get("pairs", 0.0)
        rest = prepare - s["sequences"] - s["encode"] - s["index"]
        shards = neighbours + pairs
        return (
            f"    prepare {prepare:.1f} s = sequences {s['sequences']:.1f} + encode {s['encode']:.1f} + rows {rest:.1f} "
            f"+ index {s['index']:.1f} | neighbours {neighbours:.1f} s (search {s['search']:.1f} + rest {neighbours - s['search']:.1f}) "
            f"| pairs {pairs:.1f} s (ACCESS {s['access']:.1f} + rest {pairs - s['access']:.1f}) "
            f"| sequences/s: shards {sequences / max(shards, 1e-9):.0f}, end to end {sequences / max(prepare + shards, 1e-9):.0f}"
        )
