"""LHA with hybrid retrieval: documents and sentences scored by ``w x dense cosine + (1 - w) x lexical cosine``.

The dense view is LHA's own (:mod:`models_ml.mining.lha`: unit sentence vectors, document vector = their
renormalised mean); the lexical view is character 3-gram TF-IDF (:class:`models_ml.mining.retrieval.LexicalVectoriser`)
with ONE IDF, fitted on the documents of both corpora (document frequency = how many documents hold a 3-gram):

* a document's lexical vector is the TF-IDF of all its 3-grams (its sentences joined), cut to the heaviest
  1,000 so it fits a pgvector ``sparsevec`` HNSW index;
* a sentence's lexical vector is its own 3-grams' TF-IDF under the same IDF.

Documents: each source document's K best targets by the fused score, kept at >= theta_d. Sentences: with
unit dense rows d and unit lexical rows l, ``[sqrt(w) d, sqrt(1 - w) l]`` has inner products that are exactly
the fused scores, so :func:`fused_vectors` builds those rows for one document pair (the lexical part densified
on the union of the pair's 3-gram columns, a few thousand) and :func:`models_ml.mining.lha.align_sentences`
runs on them unchanged. A sentence without 3-grams has a zero lexical part: its scores are ``w x dense``.

:func:`mine_hybrid_lha` is the exact in-memory version (the benchmarks' and the app tests' reference).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
from scipy import sparse

from models_ml.mining.knn import Neighbours, top_k_blocks
from models_ml.mining.lha import LHAConfig, _encode_corpus, _mined, align_sentences
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser, document_frequency
from models_ml.mining.types import Encode, MinedPair, MiningDocument

__all__ = [
    "document_text",
    "document_vectoriser",
    "fused_vectors",
    "hybrid_document_neighbours",
    "mine_hybrid_lha",
]


def document_text(sentences: Sequence[str]) -> str:
    """A document as one text for its lexical vector: its sentences joined by a space (3-grams cross the joins)."""
    return " ".join(sentences)


def document_vectoriser(documents: Iterable[Sequence[str]], batch: int = 200) -> LexicalVectoriser:
    """The IDF of a job: fitted on whole documents (each document counts once per 3-gram it holds), ``batch`` at a time."""
    frequency = np.zeros(LEXICAL_DIMENSIONS, dtype=np.int64)
    count, texts = 0, []
    for sentences in documents:
        texts.append(document_text(sentences))
        if len(texts) >= batch:
            frequency, count, texts = frequency + document_frequency(texts), count + len(texts), []
    if texts:
        frequency, count = frequency + document_frequency(texts), count + len(texts)
    return LexicalVectoriser.from_document_frequency(frequency, count)


def _weight(dense_weight: float) -> float:
    if isinstance(dense_weight, bool) or not isinstance(dense_weight, int | float) or not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"dense_weight must be a number from 0 to 1, got {dense_weight!r}")
    return float(dense_weight)


def fused_vectors(
    dense_source: np.ndarray, dense_target: np.ndarray, lexical_source: sparse.spmatrix, lexical_target: sparse.spmatrix,
    *, dense_weight: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(m, d + c) and (n, d + c) float32 rows ``[sqrt(w) x dense, sqrt(1 - w) x lexical]`` for one document pair.

    dense_source (m, d) / dense_target (n, d): unit rows; lexical_source (m, D) / lexical_target (n, D): unit
    (or zero) sparse rows of the same vectoriser. c = the columns either side uses, so ``source @ target.T`` is
    exactly ``w x dense_source @ dense_target.T + (1 - w) x lexical_source @ lexical_target.T``.
    """
    weight = _weight(dense_weight)
    dense_source, dense_target = np.asarray(dense_source, dtype=np.float32), np.asarray(dense_target, dtype=np.float32)
    if dense_source.ndim != 2 or dense_target.ndim != 2 or dense_source.shape[1] != dense_target.shape[1]:
        raise ValueError(f"dense rows must be 2-D with the same width, got {dense_source.shape} and {dense_target.shape}")
    lexical_source, lexical_target = sparse.csr_matrix(lexical_source), sparse.csr_matrix(lexical_target)
    if lexical_source.shape[0] != len(dense_source) or lexical_target.shape[0] != len(dense_target):
        raise ValueError(
            f"{lexical_source.shape[0]} / {lexical_target.shape[0]} lexical rows for {len(dense_source)} / {len(dense_target)} dense rows"
        )
    if lexical_source.shape[1] != lexical_target.shape[1]:
        raise ValueError(f"lexical rows of different widths: {lexical_source.shape[1]} and {lexical_target.shape[1]}")
    columns = np.union1d(lexical_source.indices, lexical_target.indices)  # (c,) sorted: the pair's 3-gram columns
    parts = []
    for dense, lexical in ((dense_source, lexical_source), (dense_target, lexical_target)):
        local = lexical[:, columns].toarray()  # (rows, c)
        parts.append(np.hstack([np.sqrt(weight) * dense, np.sqrt(1.0 - weight) * local]).astype(np.float32))
    return parts[0], parts[1]


def hybrid_document_neighbours(
    dense_source: np.ndarray, dense_target: np.ndarray, lexical_source: sparse.spmatrix, lexical_target: sparse.spmatrix,
    *, k: int, theta_d: float, dense_weight: float,
) -> list[tuple[int, int, float]]:  # fmt: skip
    """(source doc, target doc, fused score): each source's k best targets by the exact fused score, kept at >= theta_d.

    dense_* (S, d) / (T, d) unit document vectors, lexical_* (S, D) / (T, D) unit sparse rows. By source, best first;
    ties keep the lower target.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    found = _exact_fused(dense_source, dense_target, lexical_source, lexical_target, min(k, len(dense_target)), _weight(dense_weight))
    kept = (found.indices >= 0) & (found.scores >= theta_d)  # (S, k')
    rows, ranks = np.nonzero(kept)
    return [(int(r), int(found.indices[r, c]), float(found.scores[r, c])) for r, c in zip(rows, ranks, strict=True)]


def _exact_fused(dense_source, dense_target, lexical_source, lexical_target, k: int, weight: float) -> Neighbours:
    dense_source, dense_target = np.asarray(dense_source, dtype=np.float32), np.asarray(dense_target, dtype=np.float32)
    lexical_source, lexical_target_t = sparse.csr_matrix(lexical_source), sparse.csr_matrix(lexical_target).T.tocsc()
    scale = np.float32(weight)

    def fused(rows: slice, columns: slice) -> np.ndarray:  # (r, c)
        lexical = (lexical_source[rows] @ lexical_target_t[:, columns]).toarray()
        return (scale * (dense_source[rows] @ dense_target[columns].T) + (1 - scale) * lexical).astype(np.float32)

    return top_k_blocks(fused, len(dense_source), len(dense_target), max(k, 1))


def mine_hybrid_lha(
    source: Sequence[MiningDocument], target: Sequence[MiningDocument], *, encode: Encode, config: LHAConfig, dense_weight: float,
    document_pairs: Sequence[tuple[int, int]] | None = None,
) -> Iterator[MinedPair]:  # fmt: skip
    """LHA as :func:`models_ml.mining.lha.mine_lha` (no re-ranking, no global variant), both steps hybrid and exact.

    document_pairs: known (source doc, target doc) index pairs instead of the document step. A pair's ``doc_score``
    is the documents' fused score.
    """
    weight = _weight(dense_weight)
    if config.rerank is not None or config.global_variant:
        raise ValueError("hybrid LHA has no re-ranking and no global variant")
    return _mine(source, target, encode, config, weight, document_pairs)


def _mine(
    source: Sequence[MiningDocument], target: Sequence[MiningDocument], encode: Encode, config: LHAConfig, weight: float,
    document_pairs: Sequence[tuple[int, int]] | None,
) -> Iterator[MinedPair]:  # fmt: skip
    source_side = _encode_corpus(source, encode, config.encode_batch, "source")
    target_side = _encode_corpus(target, encode, config.encode_batch, "target")
    if source_side is None or target_side is None:
        return
    vectoriser = document_vectoriser([d.sentences for d in source] + [d.sentences for d in target])
    source_lexical = vectoriser.transform([document_text(d.sentences) for d in source])  # (S, D)
    target_lexical = vectoriser.transform([document_text(d.sentences) for d in target])  # (T, D)
    scores = {}
    if document_pairs is None:
        found = hybrid_document_neighbours(
            source_side.documents, target_side.documents, source_lexical, target_lexical,
            k=config.k_documents, theta_d=config.theta_d, dense_weight=weight,
        )  # fmt: skip
        scores = {(s, t): score for s, t, score in found}
        document_pairs = list(scores)
    for s, t in sorted({(int(s), int(t)) for s, t in document_pairs}):
        doc_score = scores.get((s, t))
        if doc_score is None:
            doc_score = weight * float(source_side.documents[s] @ target_side.documents[t])
            doc_score += (1 - weight) * float((source_lexical[s] @ target_lexical[t].T).toarray()[0, 0])
        fused_source, fused_target = fused_vectors(
            source_side.sentences(s), target_side.sentences(t),
            vectoriser.transform(source[s].sentences), vectoriser.transform(target[t].sentences), dense_weight=weight,
        )  # fmt: skip
        for group in align_sentences(fused_source, fused_target, k=config.k_sentences, theta_s=config.theta_s):
            mined = _mined(config, source[s], target[t], group, doc_score)
            if mined is not None:
                yield mined
