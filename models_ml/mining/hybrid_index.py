"""Hybrid nearest-neighbour search of a collection against itself: dense and lexical candidates, one fused score.

A MUSS job with hybrid retrieval scores two sequences by ``w x dense cosine + (1 - w) x lexical cosine``
(:class:`models_ml.mining.retrieval.RetrievalConfig`'s weighted sum). Searching that sum exactly means
scoring every pair; instead each view proposes its ``depth`` best candidates and the union is scored
exactly, which finds every neighbour that is among the ``depth`` best of either view (a neighbour that
is in neither list would need both cosines to be mediocre and their sum still to beat k others).

* the dense candidates come from :class:`models_ml.mining.vector_index.FaissIndex` (exact up to 50,000
  vectors) when faiss-cpu is installed, else from an exact numpy product;
* the lexical candidates from a sparse product in which each query keeps only its ``probe`` heaviest
  3-grams (the rare ones: common 3-grams like "en " are in most sentences and cost the most while
  ranking the least) over inverted lists cut to each 3-gram's ``postings`` heaviest rows, so a query's
  work is at most ``probe x postings`` whatever the collection's size; the product stays sparse.

Each query's candidates are then scored exactly (every 3-gram, the dense cosine), pair by pair. On
real English at 30,000 rows (``bench/mining_scale.py --text demo``) scoring the batch's whole union of
candidates against every query and the dense (batch x n) lexical product took 7 s a thousand queries;
pair by pair, 2.5 s; with lists of 1,024 too, 1.3 s, the paraphrase partner first as often (.976 against .975).

``exact_hybrid`` is the reference: the fused score of every pair, searched in blocks.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import sparse

from models_ml.mining.knn import Neighbours, top_k_blocks
from models_ml.mining.retrieval import _keep_heaviest
from models_ml.mining.vector_index import SELF_SEARCH_EXACT_BELOW, FaissIndex, faiss_available

__all__ = ["HybridIndex", "exact_hybrid"]

DEFAULT_PROBE = 32  # heaviest 3-grams per query for lexical candidates (a 150-character sentence has ~150)
DEFAULT_POSTINGS = 1024  # rows kept in each 3-gram's inverted list, where it weighs the most
PAIR_CHUNK = 256  # queries scored together (one thread's unit): bounds the candidate steps' arrays to a chunk's


def _checked(dense: np.ndarray, lexical: sparse.csr_matrix, ids: np.ndarray) -> tuple[np.ndarray, sparse.csr_matrix, np.ndarray]:
    dense = np.ascontiguousarray(dense, dtype=np.float32)
    ids = np.asarray(ids, dtype=np.int64)
    if dense.ndim != 2 or dense.shape[0] == 0 or lexical.shape[0] != dense.shape[0] or ids.shape != (dense.shape[0],):
        raise ValueError(f"need dense (n, d), lexical (n, D) and ids (n,) with n >= 1, got {dense.shape}, {lexical.shape}, {ids.shape}")
    if np.any(np.diff(ids) <= 0):
        raise ValueError("ids must be unique and increasing")
    return dense, sparse.csr_matrix(lexical, dtype=np.float32), ids


def exact_hybrid(dense: np.ndarray, lexical: sparse.csr_matrix, ids: np.ndarray, k: int, *, dense_weight: float) -> Neighbours:
    """Every row's k best other rows by the fused score, exactly (the tests' reference); ids as in :class:`HybridIndex`."""
    dense, lexical, ids = _checked(dense, lexical, ids)
    lexical_t = lexical.T.tocsc()
    weight = np.float32(dense_weight)

    def fused(rows: slice, columns: slice) -> np.ndarray:
        scores = weight * (dense[rows] @ dense[columns].T) + (1 - weight) * (lexical[rows] @ lexical_t[:, columns]).toarray()
        own = np.arange(rows.start, rows.stop)[:, None] == np.arange(columns.start, columns.stop)[None, :]  # (r, c) self
        return np.where(own, -np.inf, scores).astype(np.float32)

    found = top_k_blocks(fused, len(ids), len(ids), k)
    return Neighbours(np.where(found.indices >= 0, ids[np.maximum(found.indices, 0)], -1), found.scores)


class HybridIndex:
    """The rows (dense unit vectors, lexical unit sparse rows) of one collection under increasing ``ids``.

    :meth:`search_ids` gives rows already in the index their k best other rows by the fused score, best
    first, ties to the lower id; -1 / -inf where fewer exist. ``depth``: candidates per view per query; ``threads``:
    the dense index's, and how many chunks of queries are scored at once.
    """

    def __init__(
        self, dense: np.ndarray, lexical: sparse.csr_matrix, ids: np.ndarray, *, dense_weight: float, depth: int = 32,
        probe: int = DEFAULT_PROBE, postings: int = DEFAULT_POSTINGS, ef_search: int = 100, threads: int = 1,
        dense_index: FaissIndex | None = None, exact_below: int = SELF_SEARCH_EXACT_BELOW,
    ) -> None:  # fmt: skip
        self.dense, self.lexical, self.ids = _checked(dense, lexical, ids)
        if not 0.0 <= dense_weight <= 1.0 or min(depth, probe, postings) < 1:
            raise ValueError(
                f"need 0 <= dense_weight <= 1 and depth, probe, postings >= 1, got {dense_weight}, {depth}, {probe}, {postings}"
            )
        self.weight, self.depth, self.probe, self.threads = np.float32(dense_weight), depth, probe, max(1, threads)
        self.size = len(self.ids)
        self._postings = _pruned_postings(self.lexical, postings)  # (D, n): the inverted lists, one row per 3-gram
        if dense_index is None and faiss_available():  # built here unless one over the same rows is given (a stored one)
            dense_index = FaissIndex(self.dense, self.ids, ef_search=ef_search, threads=threads, exact_below=exact_below)
        self._dense_index = dense_index

    def search_ids(self, ids: np.ndarray, k: int) -> Neighbours:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        ids = np.asarray(ids, dtype=np.int64)
        rows = np.searchsorted(self.ids, ids)
        if np.any(rows >= self.size) or np.any(self.ids[np.minimum(rows, self.size - 1)] != ids):
            raise ValueError(f"ids not in the index: {sorted(set(ids.tolist()) - set(self.ids.tolist()))[:10]}")
        depth = min(max(self.depth, k), self.size)
        dense = self._dense_candidates(rows, depth)  # (q, depth): faiss, on its own threads

        def chunk_best(part: slice) -> Neighbours:
            candidates = np.concatenate([dense[part], self._lexical_candidates(rows[part], depth)], axis=1)  # (chunk, 2 depth)
            return self._fused_best(rows[part], candidates, k)

        parts = [slice(start, start + PAIR_CHUNK) for start in range(0, len(rows), PAIR_CHUNK)]
        if self.threads > 1 and len(parts) > 1:  # scipy's sparse products and numpy's gathers let go of the GIL
            with ThreadPoolExecutor(min(self.threads, len(parts))) as pool:
                found = list(pool.map(chunk_best, parts))
        else:
            found = [chunk_best(part) for part in parts]
        return Neighbours(np.concatenate([f.indices for f in found]), np.concatenate([f.scores for f in found]))

    def _fused_best(self, rows: np.ndarray, candidates: np.ndarray, k: int) -> Neighbours:
        """Each query's k best candidates (rows, -1 for none) by the exact fused score, computed for its own candidates
        only (a (q, c) pairwise product, not every query against the batch's union of candidates); q <= PAIR_CHUNK."""
        candidates = np.sort(np.where(candidates == rows[:, None], -1, candidates), axis=1)  # (q, c): itself out, repeats adjacent
        valid = candidates >= 0
        valid[:, 1:] &= candidates[:, 1:] != candidates[:, :-1]  # a row both views proposed counts once
        fused = np.where(valid, self._pair_scores(rows, np.maximum(candidates, 0)), -np.inf)  # (q, c)
        last = np.iinfo(np.int64).max
        order = np.lexsort((np.where(valid, candidates, last), -fused), axis=1)[:, :k]  # best first, the lower row on ties
        scores = np.take_along_axis(fused, order, axis=1)  # (q, <= k)
        indices = np.where(np.isfinite(scores), self.ids[np.maximum(np.take_along_axis(candidates, order, axis=1), 0)], -1)
        if indices.shape[1] < k:  # fewer candidates than k: pad
            indices = np.pad(indices, ((0, 0), (0, k - indices.shape[1])), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, k - scores.shape[1])), constant_values=-np.inf)
        return Neighbours(indices.astype(np.int64), scores.astype(np.float32))

    def _pair_scores(self, rows: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """(q, c) fused scores of each query row with each of its candidate rows."""
        dense = np.einsum("qd,qcd->qc", self.dense[rows], self.dense[candidates])  # (q, c)
        left = self.lexical[np.repeat(rows, candidates.shape[1])]  # (q c, D): each query once per candidate
        lexical = np.asarray(left.multiply(self.lexical[candidates.ravel()]).sum(axis=1)).reshape(candidates.shape)  # (q, c)
        return (self.weight * dense + (1 - self.weight) * lexical).astype(np.float32)

    def _dense_candidates(self, rows: np.ndarray, depth: int) -> np.ndarray:
        """(q, depth) rows by dense cosine, -1 where none (the index returns ids; map them back to rows)."""
        if self._dense_index is not None:
            found = self._dense_index.search_ids(self.ids[rows], depth).indices  # (q, depth) ids
            return np.where(found >= 0, np.searchsorted(self.ids, np.maximum(found, 0)), -1)
        scores = self.dense[rows] @ self.dense.T  # (q, n)
        scores[np.arange(len(rows)), rows] = -np.inf
        return _best_columns(scores, depth)

    def _lexical_candidates(self, rows: np.ndarray, depth: int) -> np.ndarray:
        """(q, depth) rows by the lexical cosine of each query's ``probe`` heaviest 3-grams over the pruned lists, -1
        where none. The product stays sparse: its size is at most q x probe x postings, whatever n; q <= PAIR_CHUNK."""
        found = np.full((len(rows), depth), -1, dtype=np.int64)  # (q, depth)
        partial = (_keep_heaviest(self.lexical[rows], self.probe) @ self._postings).tocsr()  # (q, n) sparse
        for offset, row in enumerate(rows):
            begin, end = partial.indptr[offset], partial.indptr[offset + 1]
            columns, scores = partial.indices[begin:end], partial.data[begin:end]
            columns, scores = columns[columns != row], scores[columns != row]
            if len(columns) > depth:
                best = np.argpartition(-scores, depth - 1)[:depth]
                columns = columns[best]
            found[offset, : len(columns)] = columns
        return found


def _pruned_postings(lexical: sparse.csr_matrix, postings: int) -> sparse.csr_matrix:
    """(D, n): each 3-gram's inverted list cut to the ``postings`` rows where it weighs the most (static index pruning,
    Carmel et al. 2001): a common 3-gram's other entries add little to any cosine and most of the candidate step's cost."""
    inverted = lexical.T.tocsr()  # (D, n), one row per 3-gram
    lengths = np.diff(inverted.indptr)  # (D,) document frequencies
    if inverted.nnz == 0 or lengths.max() <= postings:
        return inverted
    keep = np.ones(inverted.nnz, dtype=bool)  # (nnz,)
    for gram in np.flatnonzero(lengths > postings):
        start, stop = inverted.indptr[gram], inverted.indptr[gram + 1]
        keep[start + np.argpartition(-inverted.data[start:stop], postings - 1)[postings:]] = False
    kept = np.bincount(np.repeat(np.arange(inverted.shape[0]), lengths)[keep], minlength=inverted.shape[0])  # (D,)
    indptr = np.concatenate([[0], np.cumsum(kept)])
    return sparse.csr_matrix((inverted.data[keep], inverted.indices[keep], indptr), shape=inverted.shape)


def _best_columns(scores: np.ndarray, depth: int) -> np.ndarray:
    """(q, depth) columns of each row's ``depth`` largest scores, in no particular order (the candidates are
    rescored exactly; a partition is linear where a full sort of every row was most of a search)."""
    if depth >= scores.shape[1]:
        return np.broadcast_to(np.arange(scores.shape[1]), scores.shape).copy()
    return np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
