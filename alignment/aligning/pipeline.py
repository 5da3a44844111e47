"""An alignment run's database work on a helper thread, so that its round trips overlap the scoring.

Scoring a short pair (a few dozen sentences) is about 30 ms of Python and NumPy on one core. Reading the pair
(sentence counts, texts, vectors) and storing it (candidates by COPY, heatmaps, the commit's foreign-key checks)
took another 15 ms or so, most of it waiting for PostgreSQL, which works on the other core meanwhile
(docs/benchmarks.md, "Corpus scale"). With :class:`~alignment.jobs.helper_io.RunIO` one helper thread with its own
connection reads the next pairs ahead and stores the aligned ones behind, in order, while the run's thread scores. The helper holds the GIL only while it builds rows or parses results.

Bounds: at most two batches of ``READ_BATCH`` pairs read and not yet scored (a pair too big to score whole is not
read ahead: only its sentence counts are), and one batch of :class:`~alignment.aligning.storing.PendingWrites` being stored while the
next fills. An error on the helper is raised on the run's thread by the next call that waits for it or hands it
work; the batch it was storing is lost, as a batch stored inline would be, and a retry aligns those pairs again.

Inside a transaction (a test that is rolled back afterwards), a second connection would not see the caller's
rows: there everything runs on the caller's connection, inline and in order, as it did before the helper.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future

from django.db.models import QuerySet

from alignment.aligning.reading import PairRead, pairs_read
from alignment.jobs.helper_io import RunIO
from alignment.models import DocumentPair

READ_BATCH = 4  # pairs read together (reading.pairs_read: one cursor and two queries for them all)


def read_ahead(pending: QuerySet[DocumentPair], encoder_name: str, io: RunIO) -> Iterator[tuple[DocumentPair, PairRead | None]]:
    """``pending`` pairs in order, each with its :func:`~alignment.aligning.reading.pairs_read`, read ahead on ``io``:
    the next batch of pairs is read while the one before is scored. The first batch is one pair, so the scoring starts
    after one pair's read; the others are ``READ_BATCH``."""
    window: deque[tuple[list[DocumentPair], Future]] = deque()
    pairs = pending.iterator(chunk_size=100)
    size = 1
    while batch := list(itertools.islice(pairs, size)):
        window.append((batch, io.submit(pairs_read, [(pair.simple_document_id, pair.complex_document_id) for pair in batch], encoder_name)))
        size = READ_BATCH
        if len(window) > 1:
            yield from _read(*window.popleft())
    while window:
        yield from _read(*window.popleft())


def _read(batch: list[DocumentPair], reading: Future) -> Iterator[tuple[DocumentPair, PairRead | None]]:
    yield from zip(batch, reading.result(), strict=True)
