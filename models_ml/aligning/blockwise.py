"""Huge document pairs, block by block: a nearest-chunk step picks where to look, then the CRF aligns each block.

:meth:`Aligner.align` scores and decodes the whole (m, n) matrix of a pair. That is right for
articles (a 200 x 300 pair is 60,000 cells), and wrong for a book-length pair: an imported pair of
~218,000 short sentences held a worker for 19 minutes and 1.2 GB in one call, and nothing could
stop it halfway. Past a size (the app's ``ALIGN_BLOCK_MIN_CELLS``) a pair is aligned here instead:

1. **Plan** (:func:`plan_blocks`): the simple document is cut into blocks of ``block_rows``
   consecutive sentences. Both documents are also cut into short *chunks* (a few dozen sentences),
   each chunk's text is one TF-IDF vector (words, sublinear tf; any measure's pairs can be found
   this way, no encoder needed), and each simple chunk keeps its ``CHUNK_NEIGHBOURS`` most similar
   complex chunks. A block's columns are the complex chunks its own chunks found (best first, and
   each best chunk's two neighbours, so a partner across a chunk border is not lost), at most
   ``max_cols`` sentences, in document order. This is the nearest-neighbour candidate step: it
   follows the simple text wherever the complex text tells the same thing, in order or not.
2. **Align**: each block is an ordinary pair of ``block_rows`` x at most ``max_cols`` sentences,
   aligned by the caller with the usual pipeline (measures, paragraph alignment inside the block,
   CRF). Every simple sentence is in exactly one block, so each gets one CRF state. The CRF's cost
   per row grows with the square of its states (columns x the longest merge), so a caller whose CRF
   merges up to k sentences passes ``block_rows / k**2`` rows (:func:`rows_for_span`): every block
   then costs about the same, whatever the model.

Time and memory are linear in the pair's size: the plan's chunk matrix is (m / chunk) x (n / chunk)
with at most ``MAX_CHUNKS`` complex chunks (chunks grow with n past that), computed a batch of rows
at a time; each block costs at most ``block_rows * max_cols`` cells. What is lost against the
whole-matrix decode: the CRF's transitions across a block border (the first sentence of a block
starts fresh) and partners outside the chosen columns (the chunk step missed them). Between
blocks a caller can stop, commit, or give its worker back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch comes with the aligner
    from models_ml.aligning.aligner import Aligner
    from models_ml.data.io import AlignmentGroup

MIN_CELLS = 250_000  # pairs with more sentence pairs than this are aligned in blocks (500 x 500)
BLOCK_ROWS = 128  # simple sentences per block
MAX_COLS = 384  # complex sentences a block looks at, at most
SIMPLE_CHUNK = 32  # simple sentences per chunk: each chunk looks for its own complex chunks
MIN_CHUNK = 16  # sentences per complex chunk, at least
MAX_CHUNKS = 4096  # complex chunks, at most: longer documents get longer chunks (the plan stays bounded)
CHUNK_NEIGHBOURS = 3  # complex chunks each simple chunk keeps
ROW_BATCH = 256  # simple chunks scored against every complex chunk at once: a (256, MAX_CHUNKS) float32 array


@dataclass(frozen=True)
class Block:
    """Simple sentences ``rows`` = [start, end) and the complex sentences they are aligned against,
    as disjoint ascending [start, end) ranges."""

    rows: tuple[int, int]
    cols: tuple[tuple[int, int], ...]

    def columns(self) -> np.ndarray:
        """The complex sentence indices, ascending: (c,) int64."""
        return np.concatenate([np.arange(start, end, dtype=np.int64) for start, end in self.cols])

    @property
    def cells(self) -> int:
        return (self.rows[1] - self.rows[0]) * sum(end - start for start, end in self.cols)

    def to_json(self) -> list:
        return [list(self.rows), [list(span) for span in self.cols]]

    @classmethod
    def from_json(cls, data: list) -> Block:
        rows, cols = data
        return cls((int(rows[0]), int(rows[1])), tuple((int(a), int(b)) for a, b in cols))


def plan_blocks(
    simple: Sequence[str],
    complex_sentences: Sequence[str],
    *,
    block_rows: int = BLOCK_ROWS,
    max_cols: int = MAX_COLS,
    simple_chunk: int = SIMPLE_CHUNK,
    should_stop: Callable[[], bool] | None = None,
) -> list[Block]:
    """The blocks of one pair (m simple, n complex sentences); ``[]`` when either side is empty.

    A block's columns come from the complex chunks found by the simple chunks its rows overlap
    (blocks shorter than a chunk share their chunk's columns).

    ``should_stop`` is asked between batches of the chunk step: when it answers True the plan is
    abandoned (InterruptedError), so a cancelled job does not finish planning a huge pair first.
    """
    if block_rows < 1 or max_cols < 1:
        raise ValueError(f"block_rows and max_cols must be at least 1, got {block_rows} and {max_cols}")
    m, n = len(simple), len(complex_sentences)
    if m == 0 or n == 0:
        return []
    row_starts = range(0, m, block_rows)
    if n <= max_cols:  # every block sees the whole complex document: no search needed
        return [Block((start, min(start + block_rows, m)), ((0, n),)) for start in row_starts]
    if simple_chunk < 1:
        raise ValueError(f"simple_chunk must be at least 1, got {simple_chunk}")
    complex_chunk = max(MIN_CHUNK, math.ceil(n / MAX_CHUNKS), simple_chunk)
    nearest, scores = _nearest_chunks(simple, complex_sentences, simple_chunk, complex_chunk, should_stop)  # (p, k) each
    chunk_count = math.ceil(n / complex_chunk)
    blocks = []
    for start in row_starts:
        end = min(start + block_rows, m)
        first, last = start // simple_chunk, math.ceil(end / simple_chunk)
        chosen = _block_chunks(nearest[first:last], scores[first:last], chunk_count, max(1, max_cols // complex_chunk))
        blocks.append(Block((start, end), _ranges(chosen, complex_chunk, n)))
    return blocks


def _nearest_chunks(
    simple: Sequence[str],
    complex_sentences: Sequence[str],
    simple_chunk: int,
    complex_chunk: int,
    should_stop: Callable[[], bool] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each simple chunk's CHUNK_NEIGHBOURS most similar complex chunks (p, k) and their TF-IDF cosines (p, k)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    simple_texts = [" ".join(simple[i : i + simple_chunk]) for i in range(0, len(simple), simple_chunk)]  # p chunks
    complex_texts = [" ".join(complex_sentences[i : i + complex_chunk]) for i in range(0, len(complex_sentences), complex_chunk)]  # q
    vectorizer = TfidfVectorizer(sublinear_tf=True, dtype=np.float32)
    vectorizer.fit(complex_texts + simple_texts)
    simple_matrix = vectorizer.transform(simple_texts)  # (p, vocabulary), rows unit length
    complex_matrix = vectorizer.transform(complex_texts).T.tocsc()  # (vocabulary, q)
    k = min(CHUNK_NEIGHBOURS, len(complex_texts))
    nearest = np.empty((len(simple_texts), k), dtype=np.int64)  # (p, k)
    scores = np.empty((len(simple_texts), k), dtype=np.float32)  # (p, k)
    for start in range(0, len(simple_texts), ROW_BATCH):
        if should_stop is not None and should_stop():
            raise InterruptedError("stopped while planning the pair's blocks")
        similarity = (simple_matrix[start : start + ROW_BATCH] @ complex_matrix).toarray()  # (batch, q)
        best = np.argpartition(-similarity, k - 1, axis=1)[:, :k]  # (batch, k), unordered
        best_scores = np.take_along_axis(similarity, best, axis=1)  # (batch, k)
        order = np.lexsort((best, -best_scores), axis=1)  # best first, ties by position: deterministic
        nearest[start : start + len(best)] = np.take_along_axis(best, order, axis=1)
        scores[start : start + len(best)] = np.take_along_axis(best_scores, order, axis=1)
    return nearest, scores


def _block_chunks(nearest: np.ndarray, scores: np.ndarray, chunk_count: int, budget: int) -> list[int]:
    """Complex chunks for one block, at most ``budget``: each simple chunk's best and its neighbours first, then the rest by score."""
    wanted: dict[int, float] = {}
    for row in range(len(nearest)):
        best = int(nearest[row, 0])
        for offset, bonus in ((0, 2.0), (-1, 1.0), (1, 1.0)):  # the best chunk, then the chunks around it
            chunk = best + offset
            if 0 <= chunk < chunk_count:
                wanted[chunk] = max(wanted.get(chunk, -1.0), bonus + float(scores[row, 0]))
        for rank in range(1, nearest.shape[1]):
            chunk = int(nearest[row, rank])
            wanted[chunk] = max(wanted.get(chunk, -1.0), float(scores[row, rank]))
    ranked = sorted(wanted, key=lambda chunk: (-wanted[chunk], chunk))
    return sorted(ranked[:budget])


def _ranges(chunks: list[int], chunk: int, n: int) -> tuple[tuple[int, int], ...]:
    """Sorted chunk numbers -> merged [start, end) sentence ranges."""
    spans: list[list[int]] = []
    for number in chunks:
        start, end = number * chunk, min((number + 1) * chunk, n)
        if spans and spans[-1][1] == start:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return tuple((start, end) for start, end in spans)


def align_in_blocks(
    aligner: Aligner,
    complex_sentences: Sequence[str],
    simple: Sequence[str],
    complex_paragraphs: Sequence[int] | None = None,
    simple_paragraphs: Sequence[int] | None = None,
    *,
    block_rows: int = BLOCK_ROWS,
    max_cols: int = MAX_COLS,
) -> list[AlignmentGroup]:
    """:meth:`Aligner.align`'s groups for a huge pair, block by block (document indices, ordered as ``align`` orders them)."""
    complex_par = list(complex_paragraphs) if complex_paragraphs is not None else [0] * len(complex_sentences)
    simple_par = list(simple_paragraphs) if simple_paragraphs is not None else [0] * len(simple)
    rows_per_block = rows_for_span(block_rows, aligner.config.crf.max_span)
    groups = []
    for block in plan_blocks(simple, complex_sentences, block_rows=rows_per_block, max_cols=max_cols):
        rows, cols = np.arange(*block.rows), block.columns()  # (r,), (c,)
        result = aligner.align(
            [complex_sentences[i] for i in cols], [simple[j] for j in rows],
            dense_positions([complex_par[i] for i in cols]), dense_positions([simple_par[j] for j in rows]),
        )  # fmt: skip
        for group in result.groups:
            groups.append(
                type(group)(
                    complex=tuple(int(cols[i]) for i in group.complex),
                    simple=tuple(int(rows[j]) for j in group.simple),
                    label=group.label,
                    score=group.score,
                )  # fmt: skip
            )
    groups.sort(key=lambda g: (g.simple[0], g.complex[0]))
    return groups


def rows_for_span(block_rows: int, max_span: int) -> int:
    """Rows per block for a CRF whose states merge up to ``max_span`` complex sentences: equal decoding cost per block."""
    return max(1, block_rows // max(1, max_span) ** 2)


def dense_positions(values: Sequence[int]) -> list[int]:
    """Paragraph numbers of a block's sentences renumbered 0, 1, ... in order (what :meth:`Aligner.align` expects)."""
    mapping = {value: position for position, value in enumerate(sorted(set(values)))}
    return [mapping[value] for value in values]
