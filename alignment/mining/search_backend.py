"""Where a MUSS neighbours shard finds each sequence's k nearest sequences: pgvector or faiss.

``MINING_SEARCH_BACKEND`` picks it (a deployment setting, read when a batch runs):

pgvector  the default: one query per batch of sequences inside PostgreSQL, an HNSW search per
          sequence on the job's partial index (``hnsw.ef_search`` = ``MINING_EF_SEARCH``, iterative
          scans on).
faiss     an in-memory faiss index per worker process (``models_ml.mining.vector_index``: exact up
          to 50,000 sequences, HNSW above), and a batch of sequences is one search call. The prepare
          builds the HNSW index once and stores it in PostgreSQL (``alignment.mining.index_store``);
          a worker reads it instead of building its own. An exact index is the vectors: each worker
          builds it from them. PostgreSQL stays the source of truth of the vectors. Memory: the
          job's vectors, about 1.6 KB per sequence at 384 dimensions, once per worker process; a
          dense job with more than ``MINING_FAISS_MAX_SEQUENCES`` sequences is searched by the MUSS
          paper's IVF index (``alignment.mining.ivf_search``), a hybrid one by pgvector.

Both give the same result shape, ``[[index, cosine], ...]`` best first with the sequence itself
left out, so the pairs phase cannot tell them apart.
"""

from __future__ import annotations

import itertools

import numpy as np
from django.conf import settings
from django.db import connection
from scipy import sparse

from alignment.copying import unpacked_halves, unpacked_sparse
from alignment.index_memory import build_memory, index_build_memory_mb
from alignment.mining.cancelling import NEVER, CancelCheck
from alignment.mining.index_store import faiss_kind, index_load, index_store, index_stored
from alignment.mining.ivf_search import ivf_nearest, ivf_prepare, worker_threads
from alignment.mining.models import MiningJob, MiningSequence
from alignment.mining.vectors import stored_rows, unit_rows, vector_chunks
from alignment.mining.worker_index import WorkerIndex
from models_ml.mining.hybrid_index import HybridIndex
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS
from models_ml.mining.vector_index import SELF_SEARCH_EXACT_BELOW, FaissIndex

_job_index: WorkerIndex[FaissIndex | HybridIndex] = WorkerIndex()  # key (job, sequences): one job per worker process


HYBRID_DEPTH = 32  # hybrid: candidates each view proposes per sequence before the fused score ranks them


def hybrid_settings(config: dict, retrieval: str, default_weight: float, method: str) -> dict:
    """What a job stores of its retrieval, taking ``retrieval`` and ``dense_weight`` out of ``config`` (a copy).

    Dense: nothing (so jobs made before hybrid retrieval keep their config hash); hybrid: both keys.
    ValueError names a bad setting: an unknown retrieval, a weight outside [0, 1], a weight on a dense job."""
    config.pop("retrieval", None)
    if retrieval not in ("dense", "hybrid"):
        raise ValueError(f"unknown retrieval {retrieval!r}; {method} jobs search dense or hybrid")
    if retrieval == "dense":
        if "dense_weight" in config:
            raise ValueError("dense_weight is a setting of hybrid retrieval; this job's retrieval is dense")
        return {}
    weight = config.pop("dense_weight", default_weight)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0:
        raise ValueError(f"dense_weight must be a number from 0 to 1, got {weight!r}")
    return {"retrieval": retrieval, "dense_weight": float(weight)}


def hnsw_search_settings() -> None:
    """For the current transaction: a wider HNSW search than pgvector's default (ef_search 40 gave recall@10
    0.79 at 1 M vectors in bench/hnsw_scale.py; 100 gave 0.91), and iterative scans so a corpus or job filter
    still returns k rows."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [int(settings.MINING_EF_SEARCH)])
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")


def uses_faiss(sequences: int) -> bool:
    """faiss searches a job when it is the configured backend and the job's vectors fit ``MINING_FAISS_MAX_SEQUENCES``;
    a larger dense job is searched by the MUSS paper's IVF index (:func:`uses_ivf`), a larger hybrid one by pgvector."""
    return settings.MINING_SEARCH_BACKEND == "faiss" and sequences <= int(settings.MINING_FAISS_MAX_SEQUENCES)


def uses_ivf(job: MiningJob, sequences: int) -> bool:
    """The faiss backend past ``MINING_FAISS_MAX_SEQUENCES``: a dense job's IVF-SQ8 index (one byte a dimension, no
    graph; :mod:`models_ml.mining.ivf_index`), re-ranked by the exact cosines of the vectors PostgreSQL keeps."""
    return (
        settings.MINING_SEARCH_BACKEND == "faiss"
        and sequences > int(settings.MINING_FAISS_MAX_SEQUENCES)
        and job.retrieval != MiningJob.Retrieval.HYBRID
    )


def search_prepare(job: MiningJob, sequences: int, check: CancelCheck = NEVER) -> None:
    """After the vectors are stored: pgvector's partial HNSW index over the job's rows (idempotent).

    The faiss backend builds no index in PostgreSQL: the prepare builds the in-memory index once and stores it for
    the workers (:func:`_faiss_prepare`; past ``MINING_FAISS_MAX_SEQUENCES``, the IVF index: ``ivf_search.ivf_prepare``).
    ``check``: the prepare's cancel check, between chunks of the faiss build and during pgvector's CREATE INDEX.
    """
    if uses_faiss(sequences):
        _faiss_prepare(job, sequences, check)
        return
    if uses_ivf(job, sequences):
        ivf_prepare(job, sequences, check)
        return
    dimensions = _dimensions(job)
    if dimensions:
        table = MiningSequence._meta.db_table
        partial_hnsw_index(
            f"mining_sequence_hnsw_{int(job.pk)}", table, dimensions, "job_id", job.pk, kind="halfvec", ops="halfvec_cosine_ops",
            check=check,
        )  # fmt: skip
    if job.retrieval == MiningJob.Retrieval.HYBRID:
        partial_hnsw_index(
            f"mining_sequence_lexical_hnsw_{int(job.pk)}", MiningSequence._meta.db_table, LEXICAL_DIMENSIONS, "job_id", job.pk,
            column="lexical", kind="sparsevec", ops="sparsevec_ip_ops", check=check,
        )  # fmt: skip


def _dimensions(job: MiningJob) -> int:
    """The dimension of the job's stored sequence vectors (0 when it has none)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT vector_dims(vector) FROM {MiningSequence._meta.db_table} WHERE job_id = %s LIMIT 1", [job.pk])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _faiss_prepare(job: MiningJob, count: int, check: CancelCheck) -> None:
    """The job's faiss index. HNSW (from SELF_SEARCH_EXACT_BELOW sequences): built once here with every thread the host
    gives and stored for the workers (unless it is stored already: a resumed prepare builds nothing); this process
    keeps it for shards it runs itself. Exact: recorded only, each worker builds it from the stored vectors on its
    first shard. An exact index is the vectors themselves: at 40,000 sequences building and storing it held up the
    prepare for about 1.5 s, serially before every shard, and a worker reading it back took about as long as building
    it from the vectors (0.3-0.7 s against 0.2-0.4, bench/mining_scale.py's corpus)."""
    if count < SELF_SEARCH_EXACT_BELOW:
        megabytes = round(count * _dimensions(job) * 4 / 2**20, 1)  # float32, in each worker
        MiningJob.objects.filter(pk=job.pk).update(search_index={"kind": "exact", "sequences": count, "parts": 0, "megabytes": megabytes})
        return
    if index_stored(job, count):
        return
    index = _built_index(job, count, _search_settings(), check)
    index_store(job, index, count, faiss_kind(index))
    if job.retrieval != MiningJob.Retrieval.HYBRID:
        _job_index.keep((int(job.pk), count), index)


def _built_index(job: MiningJob, count: int, settings_: dict, check: CancelCheck = NEVER) -> FaissIndex:
    """A faiss index over the job's first ``count`` stored vectors, built here from a binary COPY a chunk at a time: it
    holds the index and a chunk, not the float collection beside the index's own copy of it (twice the vectors)."""
    if count < 1:
        raise ValueError(f"mining job {job.pk} has no sequence vectors to search")
    return FaissIndex.from_chunks(
        vector_chunks(job, count), count, between_chunks=check, exact_below=SELF_SEARCH_EXACT_BELOW, **settings_
    )  # every sequence is a query: exact up to SELF_SEARCH_EXACT_BELOW


def _search_settings() -> dict:
    return {"ef_search": int(settings.MINING_EF_SEARCH), "threads": worker_threads()}


def partial_hnsw_index(
    name: str, table: str, dimensions: int, owner_column: str, owner: int, *, column: str = "vector", kind: str = "vector",
    ops: str = "vector_cosine_ops", check: CancelCheck = NEVER,
) -> None:  # fmt: skip
    """``CREATE INDEX IF NOT EXISTS`` an HNSW index over the rows of one owner (a job, an encoder): dense cosine by default,
    or the lexical ``sparsevec`` column by inner product (its rows are unit vectors, so that is their cosine). ``check``:
    a prepare's cancel check, which stops the statement (minutes at a million rows) once the job's cancel is asked for."""
    with connection.cursor() as cursor:
        if connection.in_atomic_block:  # inside a transaction: fire the deferred FK checks first, or PostgreSQL refuses
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        needed_mb = 0
        if kind in ("vector", "halfvec"):  # the graph in memory, as the embedding job's build: 69 s instead of about 4 for
            # 60,000 document vectors past the embedded server's 64 MB (bench/lha_scale.py at 300,000 sentences)
            cursor.execute(f"SELECT count(*) FROM {table} WHERE {owner_column} = %s", [int(owner)])
            needed_mb = index_build_memory_mb(int(cursor.fetchone()[0]), int(dimensions))
        with build_memory(cursor, needed_mb), check.statement():
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON {table} "
                f"USING hnsw (({column}::{kind}({int(dimensions)})) {ops}) WHERE {owner_column} = {int(owner)}"
            )


def nearest_sequences(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    """Per row, its k nearest sequences of the job as ``[index, cosine]`` pairs, best first, itself excluded.

    Only each row's ``pk`` and ``index`` are read: both backends take the vectors from where they search.
    """
    if not rows:
        return []
    hybrid = job.retrieval == MiningJob.Retrieval.HYBRID
    sequences = job.documents_total // 2  # prepare stores 2 x the sequences (both phases' progress)
    if uses_faiss(sequences):
        return _faiss_nearest(job, rows, k)
    if uses_ivf(job, sequences):
        return ivf_nearest(job, rows, k)
    return _pgvector_hybrid_nearest(job, rows, k) if hybrid else _pgvector_nearest(job, rows, k)


def _pgvector_nearest(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    """One query for the batch: each row's k nearest by the job's HNSW index, through a LATERAL join."""
    hnsw_search_settings()  # the caller's transaction (one batch)
    table = MiningSequence._meta.db_table
    with connection.cursor() as cursor:
        typed = f"vector::halfvec({_dimensions(job)})"  # the expression the job's partial index is on
        cursor.execute(
            f"SELECT q.index, n.index, n.distance FROM {table} AS q CROSS JOIN LATERAL ("
            f"  SELECT o.index, o.{typed} <=> q.{typed} AS distance FROM {table} AS o"
            f"  WHERE o.job_id = {int(job.pk)} AND o.index <> q.index ORDER BY o.{typed} <=> q.{typed}, o.index LIMIT %s"
            f") AS n WHERE q.id = ANY(%s) ORDER BY q.index, n.distance, n.index",
            [int(k), [row.pk for row in rows]],
        )
        by_index: dict[int, list[list[float]]] = {row.index: [] for row in rows}
        for index, other, distance in cursor.fetchall():
            by_index[index].append([other, 1.0 - float(distance)])
    return [by_index[row.index] for row in rows]


def _pgvector_hybrid_nearest(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    """Hybrid: each view's HNSW index proposes its ``depth`` best (a LATERAL join each), and the union is scored
    exactly by the fused score ``w x dense cosine + (1 - w) x lexical cosine`` (see models_ml.mining.hybrid_index)."""
    hnsw_search_settings()
    table = MiningSequence._meta.db_table
    weight, depth = float(job.config["dense_weight"]), max(HYBRID_DEPTH, int(k))
    with connection.cursor() as cursor:
        dense = f"vector::halfvec({_dimensions(job)})"
        lexical = f"lexical::sparsevec({LEXICAL_DIMENSIONS})"
        fused = f"{weight!r} * (1 - (o.{dense} <=> q.d)) + {1.0 - weight!r} * -(o.{lexical} <#> q.l)"  # floats from the config
        view = f"SELECT q.index AS query, n.index, n.score FROM q CROSS JOIN LATERAL (SELECT o.index, {fused} AS score FROM {table} AS o"
        view += f" WHERE o.job_id = {int(job.pk)} AND o.index <> q.index ORDER BY o.{{}} LIMIT {int(depth)}) AS n"
        cursor.execute(  # each candidate's fused score is computed where its row is read: no second pass over the table
            f"WITH q AS (SELECT index, {dense} AS d, {lexical} AS l FROM {table} WHERE id = ANY(%s)) "
            f"SELECT query, index, score FROM ({view.format(f'{dense} <=> q.d')} UNION {view.format(f'{lexical} <#> q.l')}) AS c "
            "ORDER BY query, score DESC, index",
            [[row.pk for row in rows]],
        )
        by_index: dict[int, list[list[float]]] = {row.index: [] for row in rows}
        for index, other, score in cursor.fetchall():
            if len(by_index[index]) < k:
                by_index[index].append([other, float(score)])
    return [by_index[row.index] for row in rows]


def _faiss_nearest(job: MiningJob, rows: list[MiningSequence], k: int) -> list[list[list[float]]]:
    result = job_index(job).search_ids(np.array([row.index for row in rows], dtype=np.int64), k)  # the index holds the vectors
    return [
        [[int(i), float(score)] for i, score in zip(ids, scores) if i >= 0]
        for ids, scores in zip(result.indices, result.scores)
    ]  # fmt: skip


def job_index(job: MiningJob) -> FaissIndex | HybridIndex:
    """The job's in-memory index, built from its stored vectors on first use in this process and kept while its shards
    come (:mod:`alignment.mining.worker_index`): faiss over the dense vectors, or for a hybrid job a
    :class:`HybridIndex` over both views."""
    count = MiningSequence.objects.filter(job=job).count()

    def build() -> FaissIndex | HybridIndex:
        settings_ = _search_settings()
        stored = index_load(job, count, **settings_)  # the prepare's, where it built one: no build here
        if job.retrieval == MiningJob.Retrieval.HYBRID:
            ids, vectors, lexical = _stored_views(job, count)
            weight = float(job.config["dense_weight"])
            return HybridIndex(vectors, lexical, ids, dense_weight=weight, depth=HYBRID_DEPTH, dense_index=stored, **settings_)
        return stored or _built_index(job, count, settings_)

    index = _job_index.get((int(job.pk), count), build)
    assert index is not None  # build never gives None
    return index


def _stored_views(job: MiningJob, count: int) -> tuple[np.ndarray, np.ndarray, sparse.csr_matrix]:
    """A hybrid job's sequence ids (n,), dense vectors (n, d) and lexical rows (n, D), in index order (the hybrid index
    scores pairs with both, so it holds both). Read packed and unpacked VIEW_CHUNK rows at a time (a HalfVector and a
    SparseVector a row were 1.3 of a 30,000-sequence hybrid job's 2.4 s index build, py-spy)."""
    ids = np.empty(count, dtype=np.int64)
    vectors: np.ndarray | None = None
    lexical: list[sparse.csr_matrix] = []
    rows, done = stored_rows(job, True, limit=count, packed=True), 0  # rows stored after the count: not the index's
    while held := list(itertools.islice(rows, VIEW_CHUNK)):
        missing = next((row[0] for row in held if row[2] is None), None)
        if missing is not None:
            raise ValueError(f"mining job {job.pk}: sequence {missing} has no lexical vector; mine again to prepare it")
        dense = unpacked_halves([row[1] for row in held])
        if vectors is None:
            vectors = np.empty((count, dense.shape[1]), dtype=np.float32)
        ids[done : done + len(held)] = [row[0] for row in held]
        vectors[done : done + len(held)] = dense
        lexical.append(unpacked_sparse([row[2] for row in held], LEXICAL_DIMENSIONS))
        done += len(held)
    if vectors is None:
        raise ValueError(f"mining job {job.pk} has no sequence vectors to search")
    if done != count:
        raise ValueError(f"mining job {job.pk} has fewer than {count} stored sequence vectors; mine again to prepare them")
    return ids, unit_rows(vectors), sparse.vstack(lexical, format="csr")  # the halves' cosines, as the dense searches read them


VIEW_CHUNK = 20_000  # rows of a hybrid job's views read packed before they are unpacked
