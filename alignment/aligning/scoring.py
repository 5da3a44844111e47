"""What one run computes for one document pair, as plain data (no database here).

The run scores the pair with every measure it was asked for, lets the aligner decode with
the primary measure, and then keeps a bounded set of candidate sentence pairs: the
predicted groups' pairs plus each sentence's best-scoring pairs, so near misses can be
reviewed. At most ``(top_k + 1) * m + n`` candidates per pair, whatever its size.
"""

from __future__ import annotations

import functools
import io
import json
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from models_ml.aligning.aligner_config import LEARNED, LEXICAL_MEASURES
from models_ml.similarity.measures import SimilarityMeasure
from models_ml.similarity.pair_features import CHAR3_FEATURE

if TYPE_CHECKING:  # torch comes with the aligner: imported by whoever aligns, not by every process that reads a run
    from models_ml.aligning.aligner import Aligner, AlignmentResult

HEATMAP_MAX_CELLS = 250_000  # m x n above this: no stored matrices (a 500 x 500 heatmap is 250k cells)
MARGINAL_CANDIDATE_FLOOR = 0.05  # pairs the CRF gives at least this much belief are always candidates
# CRF decoding of a pair whose blocks can have at most this many states runs on one torch thread.
# Its tensors are tiny ((states+1)^2 per step), so each op costs microseconds and handing it to
# torch's thread pool can cost more: on 2 cores shared with other busy processes (a second worker,
# the database) the OneStopEnglish alignment job's decoding took 6-10x longer with 2 threads than
# with 1; on an idle machine the two took the same time. The results are the same bit for bit
# (tests/alignment/test_scoring_threads.py).
ONE_THREAD_MAX_STATES = 512


class NonFiniteScores(ValueError):
    """A measure scored a sentence pair NaN or infinite: the run fails naming the measure and the document pair."""


@dataclass
class SideSentences:
    """One document's sentences in order: database ids, texts, paragraph index of each, stored vectors."""

    ids: list[int]
    texts: list[str]
    paragraphs: list[int]
    vectors: np.ndarray | None = None  # (count, d) when every sentence has a stored vector


@dataclass
class Candidate:
    simple: int  # sentence index in the simple document
    complex: int
    scores: dict[str, float]
    crf_marginal: float
    label: str  # aligned | partial | not_aligned
    group_index: int | None
    group_score: float | None
    disagreement: float


@dataclass
class PairOutcome:
    result: AlignmentResult
    primary: str  # the measure the CRF saw
    candidates: list[Candidate]
    matrices: dict[str, np.ndarray]
    encoder_seconds: float = 0.0
    measure_seconds: float = 0.0
    aligner_seconds: float = 0.0
    label_counts: dict[str, int] = field(default_factory=dict)


class PairScorer:
    """Scores pairs for one run: builds each measure once, reuses stored vectors for cosine."""

    def __init__(self, aligner: Aligner, measures: Sequence[str], build: Callable[[str], SimilarityMeasure], top_k: int = 3) -> None:
        self.aligner = aligner
        self.measures = list(measures)
        self.primary = aligner.config.measure
        if self.primary not in self.measures:
            self.measures.insert(0, self.primary)
        self._build = build
        self._built: dict[str, SimilarityMeasure] = {}
        self.top_k = top_k

    def measure(self, name: str) -> SimilarityMeasure:
        if name not in self._built:
            self._built[name] = self._build(name)
        return self._built[name]

    def score(self, simple: SideSentences, complex_side: SideSentences) -> PairOutcome:
        with one_blas_thread():  # a pair's matrix products are small: see one_blas_thread
            return self._score(simple, complex_side)

    def _score(self, simple: SideSentences, complex_side: SideSentences) -> PairOutcome:
        matrices: dict[str, np.ndarray] = {}
        encoder_seconds = 0.0
        started = time.perf_counter()
        for name in sorted(self.measures, key=lambda name: name != LEARNED):  # the learned scorer first: it has char 3-grams
            stored = simple.vectors is not None and complex_side.vectors is not None
            if name == "embedding_cosine" and stored:
                matrices[name] = stored_vector_cosine(simple.vectors, complex_side.vectors)
                continue
            if name == LEARNED:  # the aligner's own pair scorer, reading the stored vectors when it uses them
                measure_started = time.perf_counter()
                cosine = stored_vector_cosine(simple.vectors, complex_side.vectors) if stored and self.aligner.uses_encoder else None
                scorer = self.measure(name)
                features = scorer.features(simple.texts, complex_side.texts, embedding_cosine=cosine)  # type: ignore[attr-defined]
                matrices[name] = scorer.logits(features)  # type: ignore[attr-defined]
                if "char3_tfidf_cosine" in self.measures:  # the measure's own scores, read off the features
                    matrices["char3_tfidf_cosine"] = np.ascontiguousarray(features[..., CHAR3_FEATURE])
                if self.aligner.uses_encoder and cosine is None:
                    encoder_seconds += time.perf_counter() - measure_started
                continue
            if name in matrices:  # the char 3-gram cosine, from the learned scorer's features
                continue
            measure_started = time.perf_counter()
            matrices[name] = np.asarray(self.measure(name).score(simple.texts, complex_side.texts), dtype=np.float32)
            if name not in LEXICAL_MEASURES:  # the others run the transformer
                encoder_seconds += time.perf_counter() - measure_started
        matrices = {name: matrices[name] for name in self.measures}  # the run's order
        for name, matrix in matrices.items():
            if not np.isfinite(matrix).all():  # the CRF's choices would be undefined, and jsonb has no NaN
                raise NonFiniteScores(f"the measure {name!r} gave scores that are not finite numbers (NaN or infinite)")
        measured = time.perf_counter()
        states = len(complex_side.texts) * self.aligner.config.crf.max_span + 1  # the most any block of this pair can have
        with torch_threads(1, when=states <= ONE_THREAD_MAX_STATES):
            result = self.aligner.align(
                complex_side.texts, simple.texts, complex_side.paragraphs, simple.paragraphs, similarity=matrices[self.primary]
            )
        aligned = time.perf_counter()
        candidates = select_candidates(result, matrices, self.primary, self.top_k) if simple.texts and complex_side.texts else []
        counts: dict[str, int] = {}
        for candidate in candidates:
            counts[candidate.label] = counts.get(candidate.label, 0) + 1
        return PairOutcome(
            result=result,
            primary=self.primary,
            candidates=candidates,
            matrices=matrices,
            encoder_seconds=encoder_seconds,
            measure_seconds=measured - started,
            aligner_seconds=aligned - measured,
            label_counts=counts,
        )


@contextmanager
def torch_threads(count: int, *, when: bool = True) -> Iterator[None]:
    """Run the block on ``count`` torch threads (when ``when``), then restore the thread count.

    torch's setting is process-wide, so this is for short, CPU-only sections such as one pair's CRF
    decoding, not for anything that runs the encoder.
    """
    import torch

    before = torch.get_num_threads()
    if not when or count == before:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@functools.cache
def _blas_pools():
    """threadpoolctl's view of the BLAS libraries loaded at first use: numpy's and scipy's (imported above)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with the BLAS libraries numpy and scipy call (OpenBLAS) on one thread, then restore them.

    A pair's matrix products are small (a few dozen rows of 384), yet OpenBLAS splits them over its threads, and its
    second thread then spins for the next product instead of sleeping: in a 1,000-pair alignment job it spent 9 s
    of the job's 22 on the other core (per-thread CPU from ``/proc``), the core that PostgreSQL and the run's helper
    thread work on. The setting is process-wide, as :func:`torch_threads`' is, and set and restored on the caller's
    thread (a restore from another thread did not take, with OpenBLAS 0.3.30).
    """
    limited = _blas_pools().limit(limits=1)
    try:
        yield
    finally:
        limited.restore_original_limits()


def stored_vector_cosine(simple_vecs: np.ndarray, complex_vecs: np.ndarray) -> np.ndarray:
    """Cosine matrix (m, n) of stored vectors (m, d) and (n, d), as the embedding_cosine measure computes it."""
    simple_unit = simple_vecs / np.maximum(np.linalg.norm(simple_vecs, axis=1, keepdims=True), 1e-12)  # (m, d)
    complex_unit = complex_vecs / np.maximum(np.linalg.norm(complex_vecs, axis=1, keepdims=True), 1e-12)  # (n, d)
    return (simple_unit @ complex_unit.T).astype(np.float32)  # (m, n)


def select_candidates(result: AlignmentResult, matrices: dict[str, np.ndarray], primary: str, top_k: int) -> list[Candidate]:
    """Predicted pairs, each simple sentence's ``top_k`` and each complex sentence's best pair by ``primary``."""
    scores = matrices[primary]  # (m, n)
    m, n = scores.shape
    keep = np.zeros((m, n), dtype=bool)  # (m, n)
    k = min(top_k, n)
    best_per_simple = np.argpartition(-scores, k - 1, axis=1)[:, :k]  # (m, k)
    keep[np.arange(m)[:, None], best_per_simple] = True
    keep[scores.argmax(axis=0), np.arange(n)] = True
    keep |= result.pair_marginals >= MARGINAL_CANDIDATE_FLOOR
    group_of: dict[tuple[int, int], int] = {}
    for index, group in enumerate(result.groups):
        for j in group.simple:
            for i in group.complex:
                keep[j, i] = True
                group_of[(j, i)] = index
    rows, cols = np.nonzero(keep)
    spread = measure_disagreement(matrices, rows, cols).tolist()
    # Each column read at once (.tolist(): the same floats as float(matrix[j, i]) a cell, which was a third of this)
    names = list(matrices)
    scores = zip(*([round(value, 5) for value in matrices[name][rows, cols].tolist()] for name in names))
    marginals = result.pair_marginals[rows, cols].tolist()
    candidates = []
    for j, i, values, marginal, disagreement in zip(rows.tolist(), cols.tolist(), scores, marginals, spread):
        index = group_of.get((j, i))
        group = result.groups[index] if index is not None else None
        candidates.append(
            Candidate(
                simple=j,
                complex=i,
                scores=dict(zip(names, values)),
                crf_marginal=marginal,
                label=group.label if group is not None else "not_aligned",
                group_index=index,
                group_score=group.score if group is not None else None,
                disagreement=disagreement,
            )
        )
    return candidates


def measure_disagreement(matrices: dict[str, np.ndarray], rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Spread (max - min) of the measures' percentile ranks of each selected cell within its pair: (len(rows),).

    Measures live on different scales (cosines, probabilities, overlaps), so their raw
    scores cannot be compared; their ranks within the same document pair can.
    """
    if len(matrices) < 2 or len(rows) == 0:
        return np.zeros(len(rows), dtype=np.float32)
    percentiles = []
    for matrix in matrices.values():
        flat = matrix.ravel()  # (m*n,)
        order = np.argsort(flat, kind="stable")
        ranks = np.empty(flat.size, dtype=np.float32)
        ranks[order] = np.arange(flat.size, dtype=np.float32) / max(1, flat.size - 1)
        percentiles.append(ranks.reshape(matrix.shape)[rows, cols])  # (len(rows),)
    stacked = np.stack(percentiles)  # (measures, len(rows))
    return stacked.max(axis=0) - stacked.min(axis=0)


# The stored heatmaps: ``MATRICES_FORMAT``, a JSON header naming each matrix (name, dtype, shape), then one zlib
# stream of their bytes. numpy's savez_compressed (a zip of .npy files, still read) took 0.8 ms of CPU a pair on the
# run's helper thread, most of it Python that holds the GIL the scoring needs; this takes 0.3, most of it zlib, which
# lets go of the GIL, and is a tenth smaller (docs/benchmarks.md, "Corpus scale").
MATRICES_FORMAT = b"AMX1"


def pack_matrices(outcome: PairOutcome) -> bytes:
    """The matrices per measure plus the CRF pair marginals, compressed; b"" above the heatmap limit.

    The heatmaps' measures are kept at float16; the one the CRF read (``outcome.primary``) at the float32 it was
    decoded from, so that re-decoding the pair from what was stored (the live refresh) gives what the run gave: a
    near-tie between two paths (a story told twice) was decided the other way on float16 scores.
    """
    m, n = outcome.result.similarity.shape
    if m * n == 0 or m * n > HEATMAP_MAX_CELLS:
        return b""
    arrays = {name: matrix.astype(np.float32 if name == outcome.primary else np.float16) for name, matrix in outcome.matrices.items()}
    arrays["crf_marginal"] = outcome.result.pair_marginals.astype(np.float16)
    header = json.dumps([[name, array.dtype.str, list(array.shape)] for name, array in arrays.items()]).encode()
    body = zlib.compress(b"".join(np.ascontiguousarray(array).tobytes() for array in arrays.values()))
    return MATRICES_FORMAT + len(header).to_bytes(4, "little") + header + body


def unpack_matrices(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_matrices` (and of the numpy zip written before it): name -> float32 (m, n); empty when
    nothing was stored."""
    if not data:
        return {}
    data = bytes(data)
    if not data.startswith(MATRICES_FORMAT):
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {name: archive[name].astype(np.float32) for name in archive.files}
    size = int.from_bytes(data[4:8], "little")
    body, offset, matrices = zlib.decompress(data[8 + size :]), 0, {}
    for name, dtype, shape in json.loads(data[8 : 8 + size]):
        array = np.frombuffer(body, dtype=np.dtype(dtype), count=int(np.prod(shape)), offset=offset)
        offset += array.nbytes
        matrices[name] = array.reshape(shape).astype(np.float32)
    return matrices
