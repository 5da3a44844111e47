"""The vectors and queries of bench/ann_vs_faiss.py, with exact top-k ground truth from faiss IndexFlatIP.

The collection is bench/hnsw_scale.py's synthetic one (``_synthetic.SyntheticCollection``: topics ->
document centres -> sentences, noise with MiniLM's spectrum), held in memory here because faiss needs
the matrix; 1 M x 384 float32 is 1.5 GB.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import faiss
import numpy as np
from _synthetic import SyntheticCollection

TOP_K = 10


@dataclass(frozen=True)
class CollectionConfig:
    """The fields SyntheticCollection reads."""

    vectors: int
    documents: int
    dim: int
    queries: int
    topics: int
    effective_dim: int  # participation ratio of the noise spectrum; >= dim means isotropic
    seed: int
    chunk_documents: int = 5_000


@dataclass(frozen=True)
class Collection:
    ids: np.ndarray  # (n,) int64, equal to the row index
    doc_ids: np.ndarray  # (n,) int32
    vectors: np.ndarray  # (n, D) float32, unit norm
    queries: np.ndarray  # (q, D) float32, unit norm, held-out sentences
    truth: np.ndarray  # (q, k) int64 exact top-k by cosine
    filter_truth: np.ndarray  # (q, k) int64 exact top-k among rows with doc_id % filter_modulus == 0
    filter_modulus: int
    generate_seconds: float
    truth_seconds: float


def exact_top_k(vectors: np.ndarray, queries: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """(q, k) row indices of the k largest inner products (cosine on unit vectors), best first."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    _scores, found = index.search(queries, k)
    return found


def build_collection(config: CollectionConfig, filter_modulus: int) -> Collection:
    started = time.perf_counter()
    synthetic = SyntheticCollection(config)
    queries, _query_documents = synthetic.held_out_queries()
    ids, doc_ids, vectors = [], [], []
    for chunk_ids, chunk_docs, chunk_vectors in synthetic.chunks():
        ids.append(chunk_ids)
        doc_ids.append(chunk_docs.astype(np.int32))
        vectors.append(chunk_vectors)
    all_ids, all_docs, all_vectors = np.concatenate(ids), np.concatenate(doc_ids), np.concatenate(vectors)
    if not np.array_equal(all_ids, np.arange(len(all_ids))):
        raise RuntimeError("the synthetic collection's ids are not 0..n-1; faiss ids would not match PostgreSQL's")
    generated = time.perf_counter()
    truth = exact_top_k(all_vectors, queries)
    kept = np.flatnonzero(all_docs % filter_modulus == 0)  # (m,) the rows a filtered query may return
    filter_truth = kept[exact_top_k(all_vectors[kept], queries)]
    return Collection(
        ids=all_ids,
        doc_ids=all_docs,
        vectors=all_vectors,
        queries=queries,
        truth=truth,
        filter_truth=filter_truth,
        filter_modulus=filter_modulus,
        generate_seconds=generated - started,
        truth_seconds=time.perf_counter() - generated,
    )


def recall_at_k(found: list[list[int]] | np.ndarray, truth: np.ndarray) -> float:
    """Share of the true top-k found in the first k results, over all queries."""
    hits = sum(len(set(list(row)[:TOP_K]) & set(true.tolist())) for row, true in zip(found, truth))
    return hits / truth.size
