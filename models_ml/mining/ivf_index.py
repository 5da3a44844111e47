"""The MUSS paper's index for collections past memory: a faiss inverted-file index with 8-bit scalar quantisation.

MUSS mined a billion sequences with LASER vectors -> PCA 512 -> 8-bit scalar quantisation, 32,768 cells, nprobe 16,
top-8. This index does the same at the app's scale: the vectors are assigned to ``cells`` centroids trained by
k-means on a sample, and stored as one byte per dimension (a quarter of float32, and no graph: an HNSW index over
1 M 384-d vectors holds 1.5 GB of vectors plus its links); a query looks into its ``nprobe`` nearest cells only.
Vectors above ``PCA_ABOVE`` dimensions are first reduced by PCA to that many (as LASER's 1,024 were to 512); the
app's encoders (384 and 512 dimensions) are kept whole.

The quantised scores are approximate (about 1e-3 off), so :meth:`IvfIndex.candidates` proposes ``depth`` candidates a
query and the caller re-ranks them by the exact cosine of the stored vectors (the app reads them from PostgreSQL, a
batch at a time): with ``nprobe`` = ``cells`` the result is the exact search's.

:func:`default_cells` follows faiss's guidance of about 4 sqrt(n) cells (a power of two), at least 39 training points
a cell; ``DEFAULT_NPROBE`` is the one measured for recall@8 >= .95 (bench/ivf_recall.py, docs/benchmarks.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from models_ml.mining.knn import Neighbours
from models_ml.mining.vector_index import _faiss

__all__ = ["DEFAULT_NPROBE", "IvfIndex", "IvfSettings", "default_cells"]

DEFAULT_NPROBE = 32
PCA_ABOVE = 512
TRAIN_PER_CELL = 64  # k-means training points a cell (faiss warns below 39)
MAX_TRAIN = 262_144


def default_cells(n: int) -> int:
    """About 4 sqrt(n) cells, a power of two, between 1 and n // 39 (enough training points for each)."""
    wanted = 2 ** round(math.log2(max(4 * math.sqrt(max(n, 1)), 1)))
    return max(1, min(wanted, n // 39 or 1))


@dataclass(frozen=True)
class IvfSettings:
    """What a job records of its index (shown on its page)."""

    cells: int
    nprobe: int
    pca: int  # dimensions after PCA; 0: none
    quantiser: str = "SQ8"
    trained_on: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class IvfIndex:
    """An IVF-SQ8 index over unit vectors of ``dimensions`` (PCA first above ``PCA_ABOVE``), trained on ``sample`` (m, d)
    for a collection of ``total`` vectors, then filled chunk by chunk (:meth:`add`), so the collection itself is never
    held in memory: only its one-byte codes."""

    def __init__(
        self, sample: np.ndarray, total: int, *, cells: int | None = None, nprobe: int = DEFAULT_NPROBE, threads: int = 1,
    ) -> None:  # fmt: skip
        faiss = _faiss()
        sample = np.ascontiguousarray(sample, dtype=np.float32)
        if sample.ndim != 2 or not len(sample):
            raise ValueError(f"need a training sample (m, d) with m >= 1, got {sample.shape}")
        d = sample.shape[1]
        cells = cells or default_cells(total)
        if not 1 <= cells <= len(sample) or nprobe < 1:
            raise ValueError(f"cells must be from 1 to the sample's {len(sample)} and nprobe >= 1, got {cells} and {nprobe}")
        faiss.omp_set_num_threads(threads)
        self._threads = threads  # set again by each add and search: OpenMP keeps the count per thread
        pca = PCA_ABOVE if d > PCA_ABOVE else 0
        inner = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(pca or d), pca or d, cells, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        self._inner = inner
        self._index = faiss.IndexPreTransform(faiss.PCAMatrix(d, pca), inner) if pca else inner
        self._index.train(sample)
        inner.nprobe = min(nprobe, cells)
        self.settings = IvfSettings(cells=cells, nprobe=inner.nprobe, pca=pca, trained_on=len(sample))

    def write(self, path: str) -> None:
        """The trained, filled index in faiss's own format (its ids inside) to ``path``; :meth:`read` takes it back."""
        _faiss().write_index(self._index, str(path))

    @classmethod
    def read(cls, path: str, settings: IvfSettings, *, threads: int = 1) -> IvfIndex:
        """An index :meth:`write` wrote, with the ``settings`` it was built with: no training, no adds."""
        faiss = _faiss()
        faiss.omp_set_num_threads(threads)
        self = cls.__new__(cls)
        self._threads = threads
        self._index = faiss.read_index(str(path))
        self._inner = faiss.extract_index_ivf(self._index)  # under the PCA, where there is one
        if self._inner.nlist != settings.cells:
            raise ValueError(f"the stored index has {self._inner.nlist} cells; its settings say {settings.cells}")
        self._inner.nprobe = settings.nprobe
        self.settings = settings
        return self

    @staticmethod
    def sample_size(total: int, cells: int | None = None) -> int:
        """How many vectors to train on for a collection of ``total``."""
        return min(total, (cells or default_cells(total)) * TRAIN_PER_CELL, MAX_TRAIN)

    def probe(self, nprobe: int) -> None:
        """Look into ``nprobe`` cells a query from now on (at most every cell)."""
        self._inner.nprobe = max(1, min(nprobe, self.settings.cells))

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Add a chunk of vectors (c, d) under their ids (c,)."""
        _faiss().omp_set_num_threads(self._threads)
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def candidates(self, queries: np.ndarray, depth: int) -> np.ndarray:
        """Each query's ``depth`` best ids by the quantised score (q, depth), -1 where fewer were found."""
        _faiss().omp_set_num_threads(self._threads)  # on this thread, whichever built or read the index
        _, found = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), max(1, min(depth, self.size)))
        return found

    def search(
        self, queries: np.ndarray, k: int, keys: Callable[[np.ndarray], np.ndarray], *, exclude: np.ndarray | None = None
    ) -> Neighbours:
        """The k nearest ids of each query (q, d), re-ranked by the exact inner product with the stored vectors
        (``keys(ids)``: (len(ids), d) for sorted unique ids); ``exclude`` (q,): an id that query never returns (its own).
        Ties keep the lower id."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        found = self.candidates(queries, 2 * k + 1)  # (q, depth): room for its own id, and for the re-ranking
        wanted = np.unique(found[found >= 0])
        vectors = keys(wanted) if len(wanted) else np.zeros((0, queries.shape[1]), np.float32)  # (w, d)
        position = np.searchsorted(wanted, np.maximum(found, 0)).clip(0, max(len(wanted) - 1, 0))
        scores = np.einsum("qd,qcd->qc", queries, vectors[position]) if len(wanted) else np.zeros(found.shape, np.float32)
        scores = np.where(found >= 0, scores, -np.inf)
        if exclude is not None:
            scores = np.where(found == np.asarray(exclude, dtype=np.int64)[:, None], -np.inf, scores)
        order = np.lexsort((np.where(np.isfinite(scores), found, np.iinfo(np.int64).max), -scores), axis=1)[:, :k]
        best = np.take_along_axis(scores, order, axis=1).astype(np.float32)
        ids = np.where(np.isfinite(best), np.take_along_axis(found, order, axis=1), -1)
        if ids.shape[1] < k:
            ids = np.pad(ids, ((0, 0), (0, k - ids.shape[1])), constant_values=-1)
            best = np.pad(best, ((0, 0), (0, k - best.shape[1])), constant_values=-np.inf)
        return Neighbours(ids, best)
