"""LHA jobs' settings and their hybrid retrieval (the dense path is in alignment/mining/service.py).

A hybrid LHA job scores documents and sentences by ``w x dense cosine + (1 - w) x lexical cosine``
(:mod:`models_ml.mining.hybrid_lha`). Prepare fits the job's one IDF version on the documents of both corpora
(``MiningJob.lexical_idf``) and stores each document's character 3-gram TF-IDF as a sparsevec
(:class:`MiningDocumentVector`) under a partial HNSW index per job. A source document's candidates are its
``depth`` nearest targets by the dense DocumentEmbedding index and its ``depth`` nearest by the lexical index;
the union is scored exactly by the fused score and the K best at >= theta_d kept. In each document pair the
sentences' lexical rows (the same IDF) are densified on the pair's columns and concatenated with the dense rows,
so :func:`models_ml.mining.lha.align_sentences` scores links by the fused score unchanged.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import asdict, fields
from itertools import groupby
from operator import itemgetter

import numpy as np
from django.db import connection, transaction
from pgvector import SparseVector

from alignment.mining.cancelling import CancelCheck
from alignment.mining.models import DocumentEmbedding, MiningDocumentVector, MiningJob
from alignment.mining.search_backend import HYBRID_DEPTH, hnsw_search_settings, hybrid_settings, partial_hnsw_index
from alignment.models import Document, Encoder, Sentence
from models_ml.mining.hybrid_lha import document_text, document_vectoriser, fused_vectors
from models_ml.mining.lha import LHAConfig
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser

# Hybrid LHA's defaults, measured with bench/deplain_lha.py --retrieval hybrid and bench/onestopenglish_lha.py
# --retrieval hybrid (docs/mining.md, "LHA with hybrid retrieval"). On German DEplain-web (MiniLM vectors, K = 5,
# filters on) group F1 peaked at theta_s 0.65 for each weight: .670 / .673 / .670 at w = 0.1 / 0.3 / 0.5, dense's
# best .646 (theta_s 0.80). theta_d 0.4 lies under every true document pair's fused score at w = 0.3 (lowest .608 on
# DEplain, .789 on OneStopEnglish), as dense's 0.5 lies under every true pair's cosine, so the sentence step decides.
LHA_HYBRID_DENSE_WEIGHT = 0.3
LHA_HYBRID_THETA_D = 0.4
LHA_HYBRID_THETA_S = 0.65
LHA_HYBRID_LANGUAGES = frozenset({"de"})  # where hybrid LHA measured better than dense; elsewhere dense stays the default
JOB_SETTINGS = {"encoder", "shard_documents", "retrieval", "dense_weight"}
BATCH_DOCUMENTS = 200

_lock = threading.Lock()
_cached: tuple[tuple[int, str], LexicalVectoriser] | None = None  # ((job pk, IDF digest), vectoriser): one job per worker


def lha_config(config: dict | None) -> LHAConfig:
    known = {f.name for f in fields(LHAConfig)}
    unknown = set(config or {}) - known - JOB_SETTINGS
    if unknown:
        raise ValueError(f"unknown LHA setting(s) {sorted(unknown)}; settings: {', '.join(sorted(known | JOB_SETTINGS))}")
    return LHAConfig(**{k: v for k, v in (config or {}).items() if k in known})


def lha_retrieval_for(language: str) -> str:
    """A new LHA job's default retrieval: hybrid where it measured better (German DEplain-web), dense elsewhere."""
    return "hybrid" if (language or "").split("-")[0].lower() in LHA_HYBRID_LANGUAGES else "dense"


def lha_stored_config(config: dict | None, encoder: str, shard_documents: int, retrieval: str) -> dict:
    """The job's settings as stored (and hashed). A dense job stores no retrieval keys, so jobs made before hybrid
    LHA existed keep their identity; a hybrid one stores ``retrieval`` and ``dense_weight``, and unless given the
    hybrid theta_d and theta_s (fused scores sit on another scale than MiniLM cosines)."""
    config = dict(config or {})
    hybrid = hybrid_settings(config, retrieval, LHA_HYBRID_DENSE_WEIGHT, "LHA")
    if hybrid:
        config.setdefault("theta_d", LHA_HYBRID_THETA_D)
        config.setdefault("theta_s", LHA_HYBRID_THETA_S)
    lha = lha_config(config)
    if lha.global_variant:
        raise ValueError("the global variant runs in the CLI benchmarks only (python -m models_ml mine); the app mines documents first")
    if lha.rerank is not None:
        raise ValueError("re-ranking by word embeddings (rerank) runs in the CLI only (python -m models_ml mine)")
    if shard_documents < 1:
        raise ValueError(f"shard_documents must be >= 1, got {shard_documents}")
    stored = {**asdict(lha), "encoder": encoder, "shard_documents": shard_documents}
    return {**stored, **hybrid}


def _document_sentences(corpora: list[int]) -> Iterator[tuple[int, list[str]]]:
    """(document id, its sentences in order) for every document of ``corpora`` that has sentences, streamed."""
    rows = Sentence.objects.filter(document__corpus_id__in=corpora).order_by("document_id", "index").values_list("document_id", "text")
    for document_id, group in groupby(rows.iterator(chunk_size=2000), key=itemgetter(0)):
        yield document_id, [text for _, text in group]


def lexical_documents_ensure(job: MiningJob, check: CancelCheck) -> int:
    """Hybrid prepare: the job's IDF (fitted once, on the first prepare, over both corpora's documents) and every
    document's lexical vector, then the job's sparsevec HNSW index. Idempotent; returns how many vectors were added.
    ``check``: the prepare's cancel check, after each batch of documents and during the index build."""
    corpora = sorted({job.source_corpus_id, job.target_corpus_id})
    if job.lexical_idf is None:
        vectoriser = document_vectoriser(sentences for _, sentences in _document_sentences(corpora))
        job.lexical_idf = vectoriser.to_bytes()
        MiningJob.objects.filter(pk=job.pk).update(lexical_idf=job.lexical_idf)
    vectoriser = job_vectoriser(job)
    stored = MiningDocumentVector.objects.filter(job=job).values("document_id")
    missing = Document.objects.filter(corpus_id__in=corpora).exclude(pk__in=stored).order_by("pk").values_list("pk", flat=True)
    added, batch = 0, []
    for document_id in missing.iterator(chunk_size=BATCH_DOCUMENTS):
        batch.append(document_id)
        if len(batch) >= BATCH_DOCUMENTS:
            added, batch = added + _store_lexical(job, vectoriser, batch), []
            check()
    added += _store_lexical(job, vectoriser, batch) if batch else 0
    partial_hnsw_index(
        f"mining_document_lexical_hnsw_{int(job.pk)}", MiningDocumentVector._meta.db_table, LEXICAL_DIMENSIONS, "job_id", job.pk,
        column="lexical", kind="sparsevec", ops="sparsevec_ip_ops", check=check,
    )  # fmt: skip
    return added


def _store_lexical(job: MiningJob, vectoriser: LexicalVectoriser, document_ids: list[int]) -> int:
    texts = {document_id: [] for document_id in document_ids}
    for document_id, text in (
        Sentence.objects.filter(document_id__in=document_ids).order_by("document_id", "index").values_list("document_id", "text")
    ):
        texts[document_id].append(text)
    rows = vectoriser.transform([document_text(texts[document_id]) for document_id in document_ids])  # (b, D) unit rows
    with transaction.atomic():
        MiningDocumentVector.objects.bulk_create(
            [MiningDocumentVector(job=job, document_id=d, lexical=SparseVector(rows[i])) for i, d in enumerate(document_ids)],
            ignore_conflicts=True,
        )
    return len(document_ids)


def job_vectoriser(job: MiningJob) -> LexicalVectoriser:
    """The job's one IDF version, read once per worker process and kept for its documents."""
    global _cached
    if job.lexical_idf is None:
        raise ValueError(f"mining job {job.pk} has no lexical IDF; prepare it again")
    key = (int(job.pk), hashlib.sha256(bytes(job.lexical_idf)).hexdigest())
    with _lock:
        if _cached is None or _cached[0] != key:
            _cached = (key, LexicalVectoriser.from_bytes(job.lexical_idf))
        return _cached[1]


def hybrid_document_neighbours(*, job: MiningJob, document_id: int, encoder: Encoder, k: int, theta_d: float) -> list[tuple[int, float]]:
    """The K target documents best for ``document_id`` by the fused score, >= theta_d: each view's HNSW index proposes
    its ``depth`` nearest (target corpus only, the document itself left out), the union is scored exactly."""
    weight, depth, dimensions = float(job.config["dense_weight"]), max(HYBRID_DEPTH, int(k)), int(encoder.dimensions)
    dense_table, lexical_table = DocumentEmbedding._meta.db_table, MiningDocumentVector._meta.db_table
    dense, lexical = f"vector::vector({dimensions})", f"lexical::sparsevec({LEXICAL_DIMENSIONS})"
    targets = (
        f"JOIN {Document._meta.db_table} AS t ON t.id = o.document_id WHERE t.corpus_id = %(corpus)s AND o.document_id <> %(document)s"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        hnsw_search_settings()
        cursor.execute(
            f"WITH q AS (SELECT e.{dense} AS d, v.{lexical} AS l FROM {dense_table} AS e JOIN {lexical_table} AS v "
            f"ON v.document_id = e.document_id AND v.job_id = %(job)s WHERE e.document_id = %(document)s AND e.encoder_id = %(encoder)s), "
            f"c AS ((SELECT o.document_id FROM q, {dense_table} AS o {targets} AND o.encoder_id = %(encoder)s "
            f"ORDER BY o.{dense} <=> q.d LIMIT %(depth)s) UNION (SELECT o.document_id FROM q, {lexical_table} AS o {targets} "
            f"AND o.job_id = %(job)s ORDER BY o.{lexical} <#> q.l LIMIT %(depth)s)) "
            f"SELECT c.document_id, %(w)s * (1 - (e.{dense} <=> q.d)) + %(lw)s * -(v.{lexical} <#> q.l) AS score FROM c CROSS JOIN q "
            f"JOIN {dense_table} AS e ON e.document_id = c.document_id AND e.encoder_id = %(encoder)s "
            f"JOIN {lexical_table} AS v ON v.document_id = c.document_id AND v.job_id = %(job)s ORDER BY score DESC, c.document_id LIMIT %(k)s",
            {"job": job.pk, "document": document_id, "encoder": encoder.pk, "corpus": job.target_corpus_id, "depth": depth,
             "w": weight, "lw": 1.0 - weight, "k": int(k)},
        )  # fmt: skip
        rows = cursor.fetchall()
    return [(int(target), float(score)) for target, score in rows if float(score) >= theta_d]


def hybrid_sentence_vectors(
    job: MiningJob, source_vectors: np.ndarray, target_vectors: np.ndarray, source_texts: list[str], target_texts: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """One document pair's sentence rows whose inner products are the fused scores (see models_ml.mining.hybrid_lha)."""
    vectoriser = job_vectoriser(job)
    return fused_vectors(
        source_vectors, target_vectors, vectoriser.transform(source_texts), vectoriser.transform(target_texts),
        dense_weight=float(job.config["dense_weight"]),
    )  # fmt: skip
