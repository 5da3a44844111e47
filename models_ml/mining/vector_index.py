"""An optional in-memory faiss index for mining's nearest-neighbour search, with :func:`knn.top_k`'s results.

Why: in ``bench/ann_vs_faiss.py`` faiss answered 16-20x more queries per second than pgvector's
HNSW at equal recall (1 M vectors), and a MUSS neighbours shard is one nearest-neighbour search per
sequence. The app can therefore search a mining job's vectors with faiss instead
(``MINING_SEARCH_BACKEND=faiss``): the vectors are read from PostgreSQL, which stays the
source of truth, into this index, and the index is a cache that any worker rebuilds.

Up to ``exact_below`` vectors the index is exact (``IndexFlatIP``: no build, and better than any
approximate index); above it, HNSW (``IndexHNSWFlat`` on inner products, M 16, efConstruction
64, efSearch as the caller asks, the same parameters as the app's pgvector index). faiss-cpu is
an optional dependency: without it, :class:`FaissIndex` raises one clear error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from models_ml.mining.knn import Neighbours

__all__ = ["EXACT_BELOW", "SELF_SEARCH_EXACT_BELOW", "FaissIndex", "FaissMissing", "faiss_available"]

EXACT_BELOW = 20_000  # flat search of 100 queries over 20,000 x 384 is ~1 ms a query on one core; beyond, HNSW
# A collection searched against itself, every vector a query (a MUSS job's sequences), is searched exactly up to this
# many vectors: all n queries cost n^2 d with nothing to build and spread over the job's shards and workers, where an
# HNSW index is first built once, serially, then searched n times. bench/exact_vs_hnsw.py, one core, 384-d, k 9:
# on MiniLM-like vectors HNSW's build + search took 1.16x, 0.91x and 0.81x the exact search's time at 20,000, 40,000
# and 60,000 (its build alone 1.9, 5.7 and 11.7 s of it), so with two workers the exact search ends first past 60,000
# and with one it costs up to ~1.2x; on isotropic vectors HNSW took 1.8-3.7x as long and found 27-51 % of the
# neighbours. Exact also means the job's pairs are the exact search's.
SELF_SEARCH_EXACT_BELOW = 50_000
ADD_CHUNK = 20_000  # vectors added between two calls of ``between_chunks`` (seconds of HNSW build on one thread)
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


class FaissMissing(RuntimeError):
    """faiss-cpu is not installed but the faiss search backend was asked for."""


def _faiss():
    try:
        import faiss
    except ImportError as error:  # an optional dependency: say what to install
        raise FaissMissing("the faiss search backend needs the faiss-cpu package: .venv/bin/pip install faiss-cpu") from error
    return faiss


def faiss_available() -> bool:
    try:
        _faiss()
    except FaissMissing:
        return False
    return True


class FaissIndex:
    """Unit vectors (n, d) under ids (n,); :meth:`search` gives each query's k best ids, best first.

    ``ids`` are the caller's keys (a MUSS sequence's index in its job), returned in
    :class:`Neighbours.indices` in place of faiss's row numbers; -1 where fewer than k exist.
    ``threads``: faiss's OpenMP threads (a worker that shares the machine: 1), set again by each search: OpenMP keeps
    the count per thread, so an index built on one thread and searched on another (an LHA shard's helper thread, a
    later shard's) searched on every core (a scratch check: 1.95 cores, against 1.00 on the thread that set 1).
    The vectors go in by chunks of :data:`ADD_CHUNK`, whatever the caller, so every index over the same vectors is
    the same graph; ``between_chunks`` is called after each but the last (a caller's cancel check raises from it and
    stops the build).
    """

    def __init__(
        self, vectors: np.ndarray, ids: np.ndarray, *, ef_search: int = 100, exact_below: int = EXACT_BELOW, threads: int = 1,
        between_chunks: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[0] != ids.shape[0] or vectors.shape[0] == 0:
            raise ValueError(f"need vectors (n, d) with n >= 1 and one id each, got vectors {vectors.shape} and ids {ids.shape}")
        if np.any(np.diff(ids) <= 0):
            raise ValueError("ids must be unique and increasing")
        self._start(vectors.shape[1], len(ids), ef_search, exact_below, threads)
        self._fill(iter([vectors]), between_chunks)
        self._keep_ids(ids)

    @classmethod
    def from_chunks(
        cls, chunks: Iterable[tuple[np.ndarray, np.ndarray]], total: int, *, ef_search: int = 100, exact_below: int = EXACT_BELOW,
        threads: int = 1, between_chunks: Callable[[], None] | None = None,
    ) -> FaissIndex:  # fmt: skip
        """The index ``FaissIndex(vectors, ids)`` would be over the chunks' ``(ids (c,), vectors (c, d))`` joined, ``total``
        in all, without ever holding them joined: a caller that streams them from the database holds the index and a
        chunk or two, not the collection and the index's copy of it as well."""
        chunks = iter(chunks)
        first = next(chunks, None)
        if first is None or total < 1:
            raise ValueError(f"need at least one chunk of vectors and total >= 1, got total {total}")
        self = cls.__new__(cls)
        self._start(np.asarray(first[1]).shape[1], total, ef_search, exact_below, threads)
        ids: list[np.ndarray] = []

        def vectors() -> Iterator[np.ndarray]:
            for chunk_ids, chunk in itertools.chain([first], chunks):
                chunk = np.ascontiguousarray(chunk, dtype=np.float32)
                ids.append(np.asarray(chunk_ids, dtype=np.int64))
                if chunk.ndim != 2 or len(chunk) != len(ids[-1]):
                    raise ValueError(f"a chunk needs vectors (c, d) and one id each, got {chunk.shape} and {ids[-1].shape}")
                yield chunk

        self._fill(vectors(), between_chunks)
        self._keep_ids(np.concatenate(ids))
        if self.size != total:
            raise ValueError(f"the chunks held {self.size} vectors, not the {total} announced")
        return self

    def _start(self, dimensions: int, total: int, ef_search: int, exact_below: int, threads: int) -> None:
        faiss = _faiss()
        if ef_search < 1 or threads < 1:
            raise ValueError(f"ef_search and threads must be >= 1, got {ef_search} and {threads}")
        faiss.omp_set_num_threads(threads)
        self._threads = threads
        self.exact = total < exact_below
        if self.exact:
            self._index = faiss.IndexFlatIP(dimensions)
        else:
            self._index = faiss.IndexHNSWFlat(dimensions, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            self._index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            self._index.hnsw.efSearch = ef_search

    def _fill(self, pieces: Iterator[np.ndarray], between_chunks: Callable[[], None] | None) -> None:
        """Add the pieces' rows in slices of exactly ADD_CHUNK (the last one shorter), whatever the pieces' sizes."""
        held: list[np.ndarray] = []
        added = 0
        for piece in itertools.chain(pieces, [None]):
            if piece is not None:
                held.append(piece)
            while held and (piece is None or sum(map(len, held)) >= ADD_CHUNK):
                joined = held[0] if len(held) == 1 else np.concatenate(held)  # (>= ADD_CHUNK or the rest, d)
                if added and between_chunks is not None:
                    between_chunks()
                self._index.add(joined[:ADD_CHUNK])
                added += min(len(joined), ADD_CHUNK)
                held = [joined[ADD_CHUNK:]] if len(joined) > ADD_CHUNK else []

    def _keep_ids(self, ids: np.ndarray) -> None:
        if np.any(np.diff(ids) <= 0):
            raise ValueError("ids must be unique and increasing")
        self._ids = ids
        self.size = int(self._index.ntotal)

    def write(self, path: str) -> None:
        """The index in faiss's own format to ``path`` (the ids are the caller's to keep: :meth:`read` takes them)."""
        _faiss().write_index(self._index, str(path))

    @classmethod
    def read(cls, path: str, ids: np.ndarray, *, ef_search: int = 100, threads: int = 1) -> FaissIndex:
        """An index :meth:`write` wrote, under the ``ids`` it was built with: no build, the graph as it was."""
        faiss = _faiss()
        faiss.omp_set_num_threads(threads)
        index = faiss.read_index(str(path))
        ids = np.asarray(ids, dtype=np.int64)
        if index.ntotal != len(ids) or np.any(np.diff(ids) <= 0):
            raise ValueError(f"the stored index holds {index.ntotal} vectors; need as many unique increasing ids, got {len(ids)}")
        self = cls.__new__(cls)
        self._index, self._ids, self.size, self._threads = index, ids, len(ids), threads
        self.exact = not hasattr(index, "hnsw")
        if not self.exact:
            index.hnsw.efSearch = ef_search
        return self

    def search_ids(self, ids: np.ndarray, k: int) -> Neighbours:
        """The k nearest ids of vectors already in the index, each leaving itself out (no vectors to pass in)."""
        ids = np.asarray(ids, dtype=np.int64)
        positions = np.searchsorted(self._ids, ids)  # the ids were added sorted (checked in __init__)
        if np.any(positions >= self.size) or np.any(self._ids[np.minimum(positions, self.size - 1)] != ids):
            raise ValueError(f"ids not in the index: {sorted(set(ids.tolist()) - set(self._ids.tolist()))[:10]}")
        return self.search(self._index.reconstruct_batch(positions), k, exclude=ids)

    def search(self, queries: np.ndarray, k: int, *, exclude: np.ndarray | None = None) -> Neighbours:
        """The k nearest ids of each query (q, d) by inner product (the cosine for unit vectors).

        exclude (q,): an id that query never returns (its own, when the queries are in the index).
        Ties keep the lower id, as pgvector's ``ORDER BY distance, index`` does.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self._index.d:
            raise ValueError(f"queries must be (q, {self._index.d}), got {queries.shape}")
        extra = 0 if exclude is None else 1
        wanted = min(k + extra, self.size)
        _faiss().omp_set_num_threads(self._threads)  # on this thread: OpenMP's count is the calling thread's own
        scores, rows = self._index.search(queries, wanted)  # (q, wanted) each; row -1 where none
        found = np.where(rows >= 0, self._ids[np.maximum(rows, 0)], -1)  # (q, wanted) caller's ids
        scores = np.where(rows >= 0, scores, -np.inf).astype(np.float32)
        if exclude is not None:
            own = found == np.asarray(exclude, dtype=np.int64)[:, None]  # (q, wanted)
            scores = np.where(own, -np.inf, scores)
        order = np.lexsort((np.where(np.isfinite(scores), found, np.iinfo(np.int64).max), -scores), axis=1)[:, :k]
        best_scores = np.take_along_axis(scores, order, axis=1)  # (q, <= k)
        best_ids = np.where(np.isfinite(best_scores), np.take_along_axis(found, order, axis=1), -1)
        if best_ids.shape[1] < k:  # fewer vectors than k: pad as top_k does
            pad = k - best_ids.shape[1]
            best_ids = np.pad(best_ids, ((0, 0), (0, pad)), constant_values=-1)
            best_scores = np.pad(best_scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        return Neighbours(best_ids, best_scores)
