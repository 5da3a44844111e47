"""The synthetic collection of bench/hnsw_scale.py: topics -> document centres -> sentence vectors.

The noise follows a power-law spectrum with MiniLM's effective dimension, generated chunk by
chunk from fixed seeds, so a million vectors never sit in memory at once. The config passed in
is hnsw_scale's BenchConfig (dim, effective_dim, topics, documents, vectors, queries, seed,
chunk_documents).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

MINILM_PARTICIPATION_RATIO = 109  # (sum l)^2 / sum l^2 of MiniLM embeddings' covariance, 2,026 OneStopEnglish sentences
DOC_SPREAD = 1.0
SENTENCE_SPREAD = 1.1


def noise_scales(dim: int, effective_dim: int) -> np.ndarray:
    """Per-axis std (D,) of a power-law spectrum l_i ~ i^-a with sum l = 1 and participation ratio effective_dim.

    Real sentence embeddings are far from isotropic (MiniLM: ~109 of 384), and
    HNSW recall depends on that intrinsic dimension, so the noise follows such a
    spectrum; cosine is rotation invariant, so axis-aligned is as good as rotated.
    """

    def spectrum(alpha: float) -> np.ndarray:
        values = np.arange(1, dim + 1, dtype=np.float64) ** -alpha
        return values / values.sum()

    if effective_dim >= dim:
        return np.full(dim, 1 / math.sqrt(dim), dtype=np.float32)
    low, high = 0.0, 8.0
    for _ in range(60):  # participation ratio falls as alpha grows
        alpha = (low + high) / 2
        low, high = (alpha, high) if 1 / np.sum(spectrum(alpha) ** 2) > effective_dim else (low, alpha)
    return np.sqrt(spectrum((low + high) / 2)).astype(np.float32)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


class SyntheticCollection:
    """Topics -> document centres -> sentences, generated chunk by chunk from fixed seeds."""

    def __init__(self, config) -> None:  # hnsw_scale.BenchConfig
        if config.vectors < config.documents:
            raise ValueError(f"--vectors ({config.vectors}) must be at least --documents ({config.documents})")
        self.config = config
        self.scales = noise_scales(config.dim, config.effective_dim)  # (D,), |noise| ~ 1
        rng = np.random.default_rng([config.seed, 0])
        topics = unit_rows(rng.standard_normal((config.topics, config.dim), dtype=np.float32) * self.scales)  # (T, D)
        topic_of = rng.integers(0, config.topics, size=config.documents)  # (N_doc,)
        noise = rng.standard_normal((config.documents, config.dim), dtype=np.float32) * self.scales  # (N_doc, D)
        self.centres = unit_rows(topics[topic_of] + DOC_SPREAD * noise)  # (N_doc, D)
        del noise
        extra = rng.multinomial(config.vectors - config.documents, np.full(config.documents, 1.0 / config.documents))
        self.sentence_counts = 1 + extra  # (N_doc,) sums to vectors
        self.first_id = np.concatenate([[0], np.cumsum(self.sentence_counts)[:-1]])  # (N_doc,)

    def sentences_of(self, documents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noise = rng.standard_normal((len(documents), self.config.dim), dtype=np.float32) * self.scales  # (n, D)
        return unit_rows(self.centres[documents] + SENTENCE_SPREAD * noise)  # (n, D)

    def held_out_queries(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.config.seed, 1])
        documents = rng.choice(self.config.documents, size=self.config.queries, replace=False)
        return self.sentences_of(documents, rng), documents

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(ids (n,), doc_ids (n,), vectors (n, D)) for consecutive ranges of documents."""
        step = self.config.chunk_documents
        for index, start in enumerate(range(0, self.config.documents, step)):
            docs = np.arange(start, min(start + step, self.config.documents))
            doc_ids = np.repeat(docs, self.sentence_counts[docs])  # (n,)
            ids = np.arange(self.first_id[docs[0]], self.first_id[docs[0]] + len(doc_ids), dtype=np.int64)
            yield ids, doc_ids, self.sentences_of(doc_ids, np.random.default_rng([self.config.seed, 2, index]))
