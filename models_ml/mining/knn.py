"""Exact k-nearest-neighbour search by cosine similarity, in bounded memory.

The app searches with pgvector HNSW; this is the exact search the CLI and the benchmarks use
(and the reference that approximate indexes are measured against). Vectors must be
L2-normalised so the dot product is the cosine. Memory is O(query_chunk x key_chunk) for the
score block plus O(queries x k) for the running best lists, whatever the collection size.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from models_ml.mining.types import Encode

__all__ = ["Neighbours", "normalise", "top_k", "top_k_blocks"]


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero); float32 (n, d)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # (n, 1)
    return vectors / np.maximum(norms, 1e-12)


class Neighbours:
    """Result of :func:`top_k`: indices (q, k) int64 into the keys (-1 where fewer than k exist) and scores (q, k)."""

    def __init__(self, indices: np.ndarray, scores: np.ndarray) -> None:
        self.indices = indices
        self.scores = scores


def top_k(
    queries: np.ndarray,
    keys: np.ndarray,
    k: int,
    *,
    exclude_self: bool = False,
    query_chunk: int = 1024,
    key_chunk: int = 16384,
) -> Neighbours:
    """The k keys with the highest cosine for every query, best first.

    queries (q, d) and keys (n, d) are unit vectors. exclude_self: queries and keys are the
    same collection and a query never returns itself (index equality). Ties keep the lower index.
    """
    queries = np.asarray(queries, dtype=np.float32)
    keys = np.asarray(keys, dtype=np.float32)
    if queries.ndim != 2 or keys.ndim != 2 or (len(queries) and len(keys) and queries.shape[1] != keys.shape[1]):
        raise ValueError(f"queries {queries.shape} and keys {keys.shape} must be 2-D with the same dimension")
    return top_k_blocks(
        lambda rows, columns: queries[rows] @ keys[columns].T,  # (qc, kc)
        len(queries), len(keys), k, exclude_self=exclude_self, query_chunk=query_chunk, key_chunk=key_chunk,
    )  # fmt: skip


def top_k_blocks(
    score_block: Callable[[slice, slice], np.ndarray],
    query_count: int,
    key_count: int,
    k: int,
    *,
    exclude_self: bool = False,
    query_chunk: int = 1024,
    key_chunk: int = 16384,
) -> Neighbours:
    """The k best keys of every query, best first, from scores computed one block at a time.

    score_block(query rows, key columns) returns the float32 scores of that block, shape
    (len(rows), len(columns)), higher is better; any score (dense cosine, sparse TF-IDF cosine,
    a fusion of both) can be searched exactly this way. Ties keep the lower index.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    q, n = query_count, key_count
    best_idx = np.full((q, k), -1, dtype=np.int64)  # (q, k)
    best_score = np.full((q, k), -np.inf, dtype=np.float32)  # (q, k)
    for q0 in range(0, q, query_chunk):
        rows = slice(q0, min(q0 + query_chunk, q))
        idx, score = best_idx[rows], best_score[rows]
        for k0 in range(0, n, key_chunk):
            block = np.asarray(score_block(rows, slice(k0, min(k0 + key_chunk, n))), dtype=np.float32)  # (qc, kc)
            if exclude_self:
                block = block.copy()  # the caller's block is not ours to write
                own = np.arange(rows.start, rows.stop)[:, None] - k0  # (qc, 1) column of each query's own key
                inside = (own >= 0) & (own < block.shape[1])
                block[np.nonzero(inside)[0], own[inside]] = -np.inf
            block_idx = np.broadcast_to(np.arange(k0, k0 + block.shape[1]), block.shape)  # (qc, kc)
            merged_score = np.concatenate([score, block], axis=1)  # (qc, k + kc)
            merged_idx = np.concatenate([idx, block_idx], axis=1)
            order = np.lexsort((merged_idx, -merged_score), axis=1)[:, :k]  # best score first, lower index on ties
            score = np.take_along_axis(merged_score, order, axis=1)
            idx = np.take_along_axis(merged_idx, order, axis=1)
        best_idx[rows], best_score[rows] = idx, score
    best_idx[~np.isfinite(best_score)] = -1
    return Neighbours(best_idx, best_score)


def encode_all(texts: list[str], encode: Encode, batch: int) -> np.ndarray:
    """Unit vectors (n, d) of all texts, encoded ``batch`` at a time; checks what ``encode`` returns."""
    parts: list[np.ndarray] = []
    for begin in range(0, len(texts), batch):
        chunk = texts[begin : begin + batch]
        vectors = np.asarray(encode(chunk), dtype=np.float32)  # (b, d)
        if vectors.ndim != 2 or len(vectors) != len(chunk):
            raise ValueError(f"encode returned shape {vectors.shape} for {len(chunk)} texts; expected ({len(chunk)}, d)")
        if parts and vectors.shape[1] != parts[0].shape[1]:
            raise ValueError(f"encode returned dimension {vectors.shape[1]}, earlier batches had {parts[0].shape[1]}")
        if not np.all(np.isfinite(vectors)):
            raise ValueError(f"encode returned non-finite values for texts {begin}..{begin + len(chunk) - 1}")
        parts.append(vectors)
    return normalise(np.concatenate(parts, axis=0))  # (n, d)
