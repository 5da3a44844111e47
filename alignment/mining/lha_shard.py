"""An LHA job's shard, batch after batch: a batch of source documents is read, mined and stored in a few round trips.

A shard mined one source document at a time with about ten queries each (its sentences' vectors parsed from
pgvector's text format by the ORM, its nearest target documents, each target's vectors and texts, the pairs, the
shard's position and the job's counters), so it ran at a small fraction of ``models_ml.mining.lha.mine_lha``'s pace
on the same vectors (docs/benchmarks.md, "Mining at scale"). Now a batch of source documents (at most
``BATCH_DOCUMENTS``, and no more of their sentences than ``BATCH_SENTENCES`` unless one document alone holds more) takes
one query for every document's nearest target documents (a LATERAL join over the document vectors' HNSW index, or one
faiss search in the worker where mining searches with faiss, :mod:`alignment.mining.lha_search`; a hybrid job asks
per document, :func:`~alignment.mining.lha_service.hybrid_document_neighbours`), one binary read of the
sentences and vectors of the batch's documents and their targets, and one transaction with the pairs (binary COPY),
the shard's position and the job's counters. A cancel is looked for before each batch; a crash loses at most the batch
in flight, which the resumed shard mines again (the pairs are unique per job, so none is stored twice).

Only the current segmentation is read (``retired_by`` unset), as the texts always were: the ORM read of the vectors
also took those of sentences split or merged on screen, whose vectors then misaligned with the texts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, F

from alignment.copying import table_name, unpacked_vectors, vector_cursor
from alignment.jobs.helper_io import RunIO, run_overlapped
from alignment.mining.cancelling import CancelCheck
from alignment.mining.lha_search import index_neighbours, searched_in_worker, target_index
from alignment.mining.lha_service import hybrid_document_neighbours, hybrid_sentence_vectors
from alignment.mining.models import DocumentEmbedding, MiningJob, MiningShard
from alignment.mining.pair_store import PairRow, mined_pairs_store
from alignment.mining.search_backend import hnsw_search_settings
from alignment.models import Document, Encoder, Sentence, SentenceEmbedding
from models_ml.mining.copies import near_identical
from models_ml.mining.lha import LHAConfig, align_sentences
from models_ml.mining.vector_index import FaissIndex
from models_ml.similarity.stop_words import unigram_overlap

BATCH_DOCUMENTS = 100
BATCH_SENTENCES = 5_000

Side = tuple[list[str], np.ndarray]  # a document's current sentences' texts and their vectors (m, d), in order


def lha_shard_run(
    job: MiningJob, shard: MiningShard, ids: list[int], config: LHAConfig, encoder: Encoder, cancelled: Callable[[], bool]
) -> bool:
    """Mine the shard's source documents (``ids``, from its start to its end) from its position, a batch at a time;
    False when it stopped for a cancel.

    A helper thread with its own connection (:func:`~alignment.jobs.helper_io.run_overlapped`) reads the next batch
    ahead and stores the last one behind while this thread mines: PostgreSQL's side of a batch (the sentences' read,
    the COPY, the commit's foreign-key checks) was 1.3 s of a 3,000-document job's 3.1 s of shards, waited for in turn
    (bench/lha_scale.py, py-spy). A cancel or a crash waits for the batch being stored, and a resumed shard starts
    after the last one stored."""

    def batches() -> Iterator[tuple[int, list[int]]]:  # (the shard's position after the batch, the batch's documents)
        position = shard.position
        while position < shard.end:
            batch = document_batch(ids, position - shard.start, len(ids))
            if not batch:  # documents deleted from the corpus since the prepare: none is left to mine
                return
            position += len(batch)
            yield position, batch

    search = document_searcher(job, config, encoder)
    clock = _BusyClock()
    io = RunIO()
    try:
        return run_overlapped(
            io,
            batches(),
            read=lambda item: batch_read(job, item[1], config, encoder, search),
            work=lambda item, read: mine_batch(job, item[1], config, encoder, read),
            store=lambda item, found: _store(job, shard, found, item[0], len(item[1]), clock),
            cancelled=cancelled,
        )
    finally:
        io.close()


class _BusyClock:
    """A shard's busy seconds, a batch at a time: from the last batch stored (or the shard's start) to this one stored,
    so that two batches that overlapped (the next one mined while the last one was stored) are not counted twice."""

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        busy, self._last = now - self._last, now
        return busy


def _store(job: MiningJob, shard: MiningShard, found: list[PairRow], position: int, documents: int, clock: _BusyClock) -> None:
    """One batch's pairs, the shard's new position and the job's counters, in one transaction."""
    with transaction.atomic():
        mined_pairs_store(found)
        shard.heartbeat(position=position)
        busy = clock.lap()  # the batch stored but for its commit
        MiningJob.objects.filter(pk=job.pk).update(documents_done=F("documents_done") + documents, busy_seconds=F("busy_seconds") + busy)


def document_batch(ids: list[int], position: int, end: int) -> list[int]:
    """The next documents of ``ids`` from ``position`` (before ``end``): at most BATCH_DOCUMENTS and BATCH_SENTENCES sentences (one at least)."""
    candidates = ids[position : min(end, position + BATCH_DOCUMENTS)]
    counts = dict(Sentence.objects.filter(document_id__in=candidates).values_list("document_id").annotate(count=Count("pk")).order_by())
    batch, total = [], 0
    for document_id in candidates:
        total += counts.get(document_id, 0)
        if batch and total > BATCH_SENTENCES:
            break
        batch.append(document_id)
    return batch


Neighbours = dict[int, list[tuple[int, float]]]  # source document -> [(target document, document score)], nearest first


DocumentSearch = Callable[[list[int]], Neighbours]  # a batch's source documents -> their nearest target documents


def document_searcher(job: MiningJob, config: LHAConfig, encoder: Encoder) -> DocumentSearch:
    """How this job finds a batch's nearest target documents, chosen once for a shard: hybrid (per document), faiss in
    this worker (its index fetched on the first batch, then kept: no count queries a batch), or pgvector."""
    k, theta_d = config.k_documents, config.theta_d
    if job.retrieval == MiningJob.Retrieval.HYBRID:
        return lambda batch: {d: hybrid_document_neighbours(job=job, document_id=d, encoder=encoder, k=k, theta_d=theta_d) for d in batch}
    if not searched_in_worker(job):
        return lambda batch: dense_neighbours(job, batch, encoder, k, theta_d)
    held: list[FaissIndex | None] = []

    def in_worker(batch: list[int]) -> Neighbours:
        if not held:  # when the first batch is read (on the helper thread): a build checks for a cancel between chunks
            held.append(target_index(job, encoder, CancelCheck(job)))
        return index_neighbours(held[0], batch, encoder, k, theta_d)

    return in_worker


def batch_read(
    job: MiningJob, batch: list[int], config: LHAConfig, encoder: Encoder, search: DocumentSearch | None = None
) -> tuple[Neighbours, dict[int, Side]]:
    """What mining ``batch`` reads: each source document's nearest target documents (``search``, or one chosen here),
    then every one's sentences."""
    neighbours = (search or document_searcher(job, config, encoder))(batch)
    return neighbours, document_sides(batch + [t for d in batch for t, _ in neighbours.get(d, [])], encoder)


def mine_batch(
    job: MiningJob, batch: list[int], config: LHAConfig, encoder: Encoder, read: tuple[Neighbours, dict[int, Side]] | None = None
) -> list[PairRow]:
    """The pairs of ``batch``'s source documents, in the batch's order (then each document's targets' order), from
    ``read`` (:func:`batch_read`'s, read ahead) or read here."""
    neighbours, sides = read if read is not None else batch_read(job, batch, config, encoder)
    hybrid = job.retrieval == MiningJob.Retrieval.HYBRID
    found: list[PairRow] = []
    for document_id in batch:
        for target_id, doc_score in neighbours.get(document_id, []):
            found += _pairs(job, config, (document_id, sides[document_id]), (target_id, sides[target_id]), doc_score, hybrid)
    return found


def dense_neighbours(job: MiningJob, documents: list[int], encoder: Encoder, k: int, theta_d: float) -> Neighbours:
    """Each document's K nearest documents of the job's target corpus (pgvector HNSW, the document itself left out),
    with cosine >= theta_d, nearest first: one LATERAL query for the batch, each row's search as the index serves one."""
    table, dimensions = table_name(DocumentEmbedding), int(encoder.dimensions)
    typed = f"vector::vector({dimensions})"
    sql = (
        f"SELECT s.document_id, n.document_id, n.distance FROM {table} AS s CROSS JOIN LATERAL ("
        f"SELECT o.document_id, o.{typed} <=> s.{typed} AS distance FROM {table} AS o "
        f"JOIN {table_name(Document)} AS t ON t.id = o.document_id "
        "WHERE o.encoder_id = %(encoder)s AND t.corpus_id = %(corpus)s AND o.document_id <> s.document_id "
        f"ORDER BY o.{typed} <=> s.{typed} LIMIT %(k)s) AS n "
        "WHERE s.encoder_id = %(encoder)s AND s.document_id = ANY(%(documents)s) ORDER BY s.document_id, n.distance"
    )
    found: dict[int, list[tuple[int, float]]] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        hnsw_search_settings()
        cursor.execute(sql, {"encoder": encoder.pk, "corpus": job.target_corpus_id, "k": int(k), "documents": list(documents)})
        for source, target, distance in cursor.fetchall():
            if 1.0 - float(distance) >= theta_d:
                found.setdefault(int(source), []).append((int(target), 1.0 - float(distance)))
    return found


def document_sides(documents: list[int], encoder: Encoder) -> dict[int, Side]:
    """Each document's current sentences' texts and vectors, in order, in one binary read (an empty side for none)."""
    wanted = sorted(set(documents))
    sentences, embeddings = (table_name(m) for m in (Sentence, SentenceEmbedding))
    rows: dict[int, tuple[list[str], list[bytes]]] = {d: ([], []) for d in wanted}
    with vector_cursor(packed=True) as cursor:
        cursor.execute(
            f"SELECT s.document_id, s.text, e.vector FROM {sentences} AS s JOIN {embeddings} AS e ON e.sentence_id = s.id "
            "AND e.encoder_id = %s WHERE s.document_id = ANY(%s) AND s.retired_by_id IS NULL ORDER BY s.document_id, s.index",
            [encoder.pk, wanted],
            binary=True,
        )
        for document_id, text, vector in cursor:
            texts, vectors = rows[document_id]
            texts.append(text)
            vectors.append(vector)
    return {d: (texts, unpacked_vectors(vectors, int(encoder.dimensions))) for d, (texts, vectors) in rows.items()}


def _pairs(
    job: MiningJob, config: LHAConfig, source: tuple[int, Side], target: tuple[int, Side], doc_score: float, hybrid: bool
) -> list[PairRow]:
    """One document pair's sentence groups as MinedPair rows, after the job's filters; a hybrid job scores by the fused score."""
    (source_id, (source_texts, source_rows)), (target_id, (target_texts, target_rows)) = source, target
    if hybrid:  # rows whose inner products are the fused scores
        source_rows, target_rows = hybrid_sentence_vectors(job, source_rows, target_rows, source_texts, target_texts)
    found = []
    for groups_source, groups_target, score in align_sentences(source_rows, target_rows, k=config.k_sentences, theta_s=config.theta_s):
        source_text = " ".join(source_texts[i] for i in groups_source)
        target_text = " ".join(target_texts[j] for j in groups_target)
        overlap = unigram_overlap(source_text, target_text, config.language)
        ratio = len(target_text) / max(len(source_text), 1)
        if config.min_overlap is not None and overlap < config.min_overlap:
            continue
        if config.max_length_ratio is not None and ratio > config.max_length_ratio:
            continue
        if config.min_levenshtein is not None and near_identical(source_text, target_text, min_levenshtein=config.min_levenshtein):
            continue  # a near-copy: nothing to learn from (LHAConfig.min_levenshtein)
        found.append(
            PairRow(
                job_id=job.pk, source_document_id=source_id, target_document_id=target_id,
                source_sentences=list(groups_source), target_sentences=list(groups_target),
                source_key=",".join(map(str, groups_source)), target_key=",".join(map(str, groups_target)),
                source_text=source_text, target_text=target_text, source_count=len(groups_source), target_count=len(groups_target),
                source_tokens=len(source_text.split()), target_tokens=len(target_text.split()),
                score=float(score), doc_score=doc_score, length_ratio=ratio, overlap=overlap,
                features={"overlap": overlap, "length_ratio": ratio},
            )
        )  # fmt: skip
    return found
