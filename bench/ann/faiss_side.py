"""faiss on the bench's vectors: HNSW (IndexHNSWFlat) and IVF-PQ (IndexIVFPQ, optionally re-ranked exactly).

Inner product on unit vectors is cosine, as pgvector's ``<=>`` ranks. Build uses ``build_threads``
OpenMP threads (to match PostgreSQL's leader + parallel maintenance workers); the sweep runs one
query per ``search`` call on one thread, like one connection sending one query at a time.
"""

from __future__ import annotations

import math
import time

import faiss
import numpy as np

from ann.collection import TOP_K, Collection, recall_at_k
from ann.results import MethodResult, SweepPoint, ef_construction_for

MIN_SECONDS = 0.5  # faiss answers 300 queries in milliseconds: repeat the pass until it takes this long
MAX_PASSES = 50


def serialized_bytes(index: faiss.Index) -> int:
    return int(faiss.serialize_index(index).size)


def sweep(index: faiss.Index, collection: Collection, values: tuple[int, ...], set_parameter) -> list[SweepPoint]:
    faiss.omp_set_num_threads(1)
    points = []
    for value in values:
        set_parameter(value)
        index.search(collection.queries[:20], TOP_K)  # warm caches
        passes: list[np.ndarray] = []
        while sum(float(p.sum()) for p in passes) < MIN_SECONDS and len(passes) < MAX_PASSES:  # short passes are noise
            found, latencies = [], np.empty(len(collection.queries))
            for row, query in enumerate(collection.queries):
                started = time.perf_counter()
                _scores, ids = index.search(query[None, :], TOP_K)  # (1, k)
                latencies[row] = time.perf_counter() - started
                found.append(ids[0])
            passes.append(latencies)
        points.append(SweepPoint.from_latencies(value, recall_at_k(found, collection.truth), np.concatenate(passes)))
    return points


def batch_rates(index: faiss.Index, collection: Collection, threads: tuple[int, ...]) -> dict[int, float]:
    """Queries/s when all queries go in one ``search`` call, spread over OpenMP threads."""
    rates = {}
    for count in threads:
        faiss.omp_set_num_threads(count)
        index.search(collection.queries, TOP_K)
        passes, started = 0, time.perf_counter()
        while time.perf_counter() - started < MIN_SECONDS and passes < MAX_PASSES:
            index.search(collection.queries, TOP_K)
            passes += 1
        rates[count] = passes * len(collection.queries) / (time.perf_counter() - started)
    return rates


def hnsw(collection: Collection, m: int, ef_search: tuple[int, ...], build_threads: int) -> tuple[MethodResult, faiss.IndexHNSWFlat]:
    dim, ef_construction = collection.vectors.shape[1], ef_construction_for(m)
    faiss.omp_set_num_threads(build_threads)
    index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    started = time.perf_counter()
    index.add(collection.vectors)
    result = MethodResult(
        "faiss",
        f"HNSW M{m}",
        "efSearch",
        time.perf_counter() - started,
        serialized_bytes(index),
        len(collection.vectors),
        notes=f"efConstruction {ef_construction}",
    )

    def set_ef(value: int) -> None:
        index.hnsw.efSearch = value

    result.points = sweep(index, collection, ef_search, set_ef)
    result.parallel_parameter = result.first_parameter_reaching(0.95)
    set_ef(result.parallel_parameter)
    result.parallel = batch_rates(index, collection, (1, build_threads))
    return result, index


def default_nlist(vectors: int) -> int:
    """A power of two near 2 sqrt(n), within faiss's rule of thumb (sqrt(n) to 16 sqrt(n) IVF cells)."""
    return max(16, 2 ** round(math.log2(2 * math.sqrt(vectors))))


def ivf_pq(
    collection: Collection, nlist: int, pq_m: int, nprobe: tuple[int, ...], rerank_factor: int, build_threads: int
) -> list[MethodResult]:
    """IVF-PQ alone, and the same index re-ranked exactly (IndexRefineFlat, ``rerank_factor`` x k candidates)."""
    dim = collection.vectors.shape[1]
    if dim % pq_m:
        raise ValueError(f"--pq-m {pq_m} must divide the dimension {dim}")
    faiss.omp_set_num_threads(build_threads)
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFPQ(quantizer, dim, nlist, pq_m, 8, faiss.METRIC_INNER_PRODUCT)
    train_rows = min(len(collection.vectors), max(40 * nlist, 256 * 64))  # k-means subsamples to 256 points a centroid anyway
    training = collection.vectors[np.random.default_rng(0).choice(len(collection.vectors), train_rows, replace=False)]
    started = time.perf_counter()
    index.train(training)
    index.add(collection.vectors)
    build_seconds = time.perf_counter() - started
    note = f"nlist {nlist}, PQ{pq_m}x8 ({pq_m} B codes), trained on {train_rows:,} rows"
    plain = MethodResult("faiss", f"IVF-PQ{pq_m}", "nprobe", build_seconds, serialized_bytes(index), len(collection.vectors), notes=note)

    def set_nprobe(value: int) -> None:
        index.nprobe = value

    plain.points = sweep(index, collection, nprobe, set_nprobe)
    plain.parallel_parameter = plain.first_parameter_reaching(0.95)
    set_nprobe(plain.parallel_parameter)
    plain.parallel = batch_rates(index, collection, (1, build_threads))
    results = [plain]
    if rerank_factor > 0:
        started = time.perf_counter()
        refined = faiss.IndexRefineFlat(index, faiss.swig_ptr(collection.vectors))
        refined.k_factor = rerank_factor
        refine_seconds = time.perf_counter() - started
        rerank = MethodResult(
            "faiss",
            f"IVF-PQ{pq_m} + re-rank",
            "nprobe",
            build_seconds + refine_seconds,
            serialized_bytes(refined),
            len(collection.vectors),
            notes=f"{note}; exact re-rank of {rerank_factor * TOP_K} candidates (float32 copy of the vectors)",
        )
        rerank.points = sweep(refined, collection, nprobe, set_nprobe)
        rerank.parallel_parameter = rerank.first_parameter_reaching(0.95)
        set_nprobe(rerank.parallel_parameter)
        rerank.parallel = batch_rates(refined, collection, (1, build_threads))
        results.append(rerank)
    return results


def hnsw_filtered(index: faiss.IndexHNSWFlat, collection: Collection, ef_search: tuple[int, ...]) -> list[tuple[int, float, float, float]]:
    """(efSearch, recall@10, mean results, queries/s on one thread) for HNSW searches restricted by an IDSelector."""
    kept = np.flatnonzero(collection.doc_ids % collection.filter_modulus == 0).astype(np.int64)
    selector = faiss.IDSelectorBatch(len(kept), faiss.swig_ptr(kept))
    faiss.omp_set_num_threads(1)
    rows = []
    for value in ef_search:
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=value)
        started = time.perf_counter()
        _scores, found = index.search(collection.queries, TOP_K, params=params)  # (q, k), -1 where missing
        rate = len(collection.queries) / (time.perf_counter() - started)
        returned = float((found >= 0).sum(axis=1).mean())
        rows.append((value, recall_at_k([row[row >= 0] for row in found], collection.filter_truth), returned, rate))
    return rows
