"""An LHA job's nearest target documents searched in the worker: faiss over the target corpus's document vectors.

Where the deployment searches mining jobs with faiss (``MINING_SEARCH_BACKEND=faiss``) a dense LHA job does not ask
pgvector's HNSW index for each batch's nearest documents: a worker reads the target corpus's document vectors once
(binary, a chunk at a time), keeps them in a :class:`~models_ml.mining.vector_index.FaissIndex` (exact below 20,000
documents, HNSW above, as a MUSS job's sequences) and searches a batch in one call, as ``mine_lha`` searches its
documents in memory. At 3,000 target documents pgvector's search was 2.8 s of the job's 9.4 (bench/lha_scale.py).

Memory: the target corpus's document vectors, about 1.6 KB a document at 384 dimensions, once per worker process (one
job's at a time); a target corpus above ``MINING_FAISS_MAX_SEQUENCES`` documents, or a hybrid job, is searched by
pgvector. PostgreSQL stays the source of truth: the index is built from the stored vectors, again when their number
changes (documents added to the corpus while it is mined).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from django.conf import settings

from alignment.copying import table_name, unpacked_vectors, vector_cursor
from alignment.mining.cancelling import NEVER, CancelCheck
from alignment.mining.ivf_search import worker_threads
from alignment.mining.models import DocumentEmbedding, MiningJob
from alignment.mining.worker_index import WorkerIndex
from alignment.models import Document, Encoder
from models_ml.mining.vector_index import EXACT_BELOW, FaissIndex, faiss_available

CHUNK = 20_000  # document vectors read at a time to build the index (30 MB as float32 at 384 dimensions)

_documents_index: WorkerIndex[FaissIndex] = WorkerIndex()  # key (job, encoder, documents): one job per worker process


def searched_in_worker(job: MiningJob, documents: int | None = None) -> bool:
    """Whether ``job``'s document step runs in the worker (faiss) rather than in PostgreSQL (pgvector); ``documents``:
    the target corpus's count where the caller has it (counted here otherwise)."""
    if job.retrieval == MiningJob.Retrieval.HYBRID or settings.MINING_SEARCH_BACKEND != "faiss" or not faiss_available():
        return False
    if documents is None:
        documents = Document.objects.filter(corpus_id=job.target_corpus_id).count()
    return documents <= int(settings.MINING_FAISS_MAX_SEQUENCES)


def document_search(job: MiningJob) -> dict:
    """How ``job``'s document step searches, as its page shows it (``MiningJob.search_index``, kind ``documents``)."""
    documents = Document.objects.filter(corpus_id=job.target_corpus_id).count()
    described = {"kind": "documents", "documents": documents, "ef_search": int(settings.MINING_EF_SEARCH)}
    if searched_in_worker(job, documents):
        return {**described, "backend": "faiss", "index": "exact" if documents < EXACT_BELOW else "hnsw"}
    return {**described, "backend": "pgvector", "index": "hnsw"}


def faiss_document_neighbours(
    job: MiningJob, documents: list[int], encoder: Encoder, k: int, theta_d: float, check: CancelCheck = NEVER
) -> dict[int, list[tuple[int, float]]]:
    """Each document's K nearest documents of the job's target corpus with cosine >= theta_d, nearest first, the
    document itself left out: the rows :func:`alignment.mining.lha_shard.dense_neighbours` gives from pgvector.
    ``check``: called between chunks of the index's build (a cancel raises from it: a build over a large corpus
    takes minutes)."""
    return index_neighbours(target_index(job, encoder, check), documents, encoder, k, theta_d)


def index_neighbours(
    index: FaissIndex | None, documents: list[int], encoder: Encoder, k: int, theta_d: float
) -> dict[int, list[tuple[int, float]]]:
    """:func:`faiss_document_neighbours` with the index in hand (a shard gets it once, not a count query a batch)."""
    if index is None:
        return {}
    ids, queries = _vectors(encoder, "e.document_id = ANY(%s)", [list(documents)])
    found = index.search(queries, int(k), exclude=ids)
    neighbours: dict[int, list[tuple[int, float]]] = {}
    for source, targets, scores in zip(ids.tolist(), found.indices, found.scores):
        kept = [(int(t), float(s)) for t, s in zip(targets, scores) if t >= 0 and s >= theta_d]
        if kept:
            neighbours[source] = kept
    return neighbours


def target_index(job: MiningJob, encoder: Encoder, check: CancelCheck = NEVER) -> FaissIndex | None:
    """The index over the target corpus's stored document vectors, built on first use in this process and kept for the
    job's next batches while they come (:mod:`alignment.mining.worker_index`; None when the corpus has none)."""
    count = DocumentEmbedding.objects.filter(encoder=encoder, document__corpus_id=job.target_corpus_id).count()

    def build() -> FaissIndex | None:
        if count == 0:
            return None
        options = {"ef_search": int(settings.MINING_EF_SEARCH), "threads": worker_threads()}
        return FaissIndex.from_chunks(_target_chunks(job, encoder), count, between_chunks=check, **options)

    return _documents_index.get((int(job.pk), int(encoder.pk), count), build)


def _target_chunks(job: MiningJob, encoder: Encoder) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    after = -1
    while True:
        ids, vectors = _vectors(encoder, "d.corpus_id = %s AND e.document_id > %s", [job.target_corpus_id, after], limit=CHUNK)
        if not len(ids):
            return
        yield ids, vectors
        after = int(ids[-1])


def _vectors(encoder: Encoder, where: str, params: list, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(document ids (n,), float32 vectors (n, d)) of the encoder's stored document vectors matching ``where``, by id."""
    table, documents = (table_name(m) for m in (DocumentEmbedding, Document))
    with vector_cursor(packed=True) as cursor:
        cursor.execute(
            f"SELECT e.document_id, e.vector FROM {table} AS e JOIN {documents} AS d ON d.id = e.document_id "
            f"WHERE e.encoder_id = %s AND {where} ORDER BY e.document_id" + (f" LIMIT {int(limit)}" if limit else ""),
            [encoder.pk, *params],
            binary=True,
        )
        rows = cursor.fetchall()
    vectors = unpacked_vectors([vector for _, vector in rows], int(encoder.dimensions))
    return np.array([row[0] for row in rows], dtype=np.int64), vectors
