"""An alignment run's database work on a helper thread, so that its round trips overlap the scoring.

Scoring a short pair (a few dozen sentences) is about 30 ms of Python and NumPy on one core. Reading the pair
(sentence counts, texts, vectors) and storing it (candidates by COPY, heatmaps, the commit's foreign-key checks)
took another 15 ms or so, most of it waiting for PostgreSQL, which works on the other core meanwhile
(docs/benchmarks.md, "Corpus scale"). With :class:`~alignment.jobs.helper_io.RunIO` one helper thread with its own
connection reads the next pairs ahead and stores the aligned ones behind, in order, while the run's thread scores. The helper holds the GIL only while it builds rows or parses results.

Bounds: at most two batches of ``READ_BATCH`` pairs read and not yet scored, and about twice
``READ_AHEAD_SENTENCES`` sentences or two pairs past it (a pair too big to score whole is not read: only its sentence
counts are), and one batch of :class:`~alignment.aligning.storing.PendingWrites` being stored while the
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
# Sentences read ahead at most, beside the batch being scored: a pair read whole is bounded by its cells
# (ALIGN_BLOCK_MIN_CELLS), and one of 1 x 250,000 sentences holds about 0.4 GB of vectors. A batch stops before the
# pair that would pass this (the first pair of a batch is always read), and a batch past it is read only once the
# one before is scored, so a run holds about twice this many sentences, or two pairs past it, whatever its pairs.
READ_AHEAD_SENTENCES = 20_000


def read_ahead(pending: QuerySet[DocumentPair], encoder_name: str, io: RunIO) -> Iterator[tuple[DocumentPair, PairRead | None]]:
    """``pending`` pairs in order, each with its :func:`~alignment.aligning.reading.pairs_read`, read ahead on ``io``:
    the next batch of up to ``READ_BATCH`` pairs is read while the one before is scored (while its last pair is, when
    that batch's sentences passed ``READ_AHEAD_SENTENCES``). The first batch is one pair, so the scoring starts after
    one pair's read."""
    pairs = pending.iterator(chunk_size=100)
    waiting: deque[DocumentPair] = deque()  # taken from ``pairs``, not read yet

    def take(count: int) -> list[DocumentPair]:
        waiting.extend(itertools.islice(pairs, max(0, count - len(waiting))))
        return [waiting.popleft() for _ in range(min(count, len(waiting)))]

    batch = take(1)
    reading = _submit(io, batch, encoder_name) if batch else None
    while batch:
        reads = reading.result()
        waiting.extendleft(reversed(batch[len(reads) :]))  # the pairs past the budget go first in the next batch
        upcoming = take(READ_BATCH)
        sentences = sum(len(read.simple.ids) + len(read.complex_side.ids) for read in reads if read is not None)
        read_next_at = 1 if sentences <= READ_AHEAD_SENTENCES else len(reads)  # the pair during whose scoring it is read
        for number, (pair, read) in enumerate(zip(batch, reads), 1):
            if upcoming and number == read_next_at:
                reading = _submit(io, upcoming, encoder_name)
            yield pair, read
        batch = upcoming


def _submit(io: RunIO, batch: list[DocumentPair], encoder_name: str) -> Future:
    pairs = [(pair.simple_document_id, pair.complex_document_id) for pair in batch]
    return io.submit(pairs_read, pairs, encoder_name, READ_AHEAD_SENTENCES)
