"""pgvector HNSW at scale: recall@10 against exact search, queries/s, build time and memory.

    .venv/bin/python bench/hnsw_scale.py [--vectors 1000000] [--documents 100000] [--dim 384]
        [--queries 300] [--settings 8:32,16:64] [--ef-search 10,40,100,200] [--seed 0]

A quick check: ``--vectors 20000 --documents 2000 --queries 100`` (about a minute).

Runs on the embedded PostgreSQL + pgvector the app uses (``bench/_django.py``, a
throw-away state directory deleted at exit), or on ``DATABASE_URL`` if set. The
bulk data does not go through Django models: a plain table
``bench_vectors(id bigint, doc_id int, v vector(D))`` is filled with binary COPY
in chunks, so the loader's memory stays bounded whatever ``--vectors`` is.

Synthetic "perturbed" collection (seeded ``numpy.random.Generator``), three
levels so that neighbours are graded rather than one tight cluster per query:

- ``--topics`` unit topic directions t (default documents / 100);
- each document's centre d = normalise(t + DOC_SPREAD * n);
- each document has 1 + Multinomial(vectors - documents) sentences (mean 10),
  each s = normalise(d + SENTENCE_SPREAD * n).

The noise n (and the topics) are Gaussian with a power-law spectrum whose
participation ratio is ``--effective-dim`` (default 109, measured on MiniLM
embeddings of 2,026 OneStopEnglish sentences; E|n|^2 = 1). Real embeddings are
that anisotropic, and HNSW recall depends on it: ``--effective-dim 384`` gives
isotropic noise, a harder, pessimistic case. Expected cosines: two sentences of
one document ~0.45, of two documents on one topic ~0.23, unrelated ~0 with sd
~0.1 (MiniLM on OneStopEnglish: mean 1st / 10th neighbour 0.55 / 0.39 among
2,026 sentences, unrelated pairs 0.07 with sd 0.09). Queries are
held-out sentences drawn the same way from random documents, so they are not in
the table. Exact top-10 (cosine) is computed with NumPy while the chunks are
generated; a few exact scans in PostgreSQL (no index) cross-check it.

For each ``m:ef_construction`` setting: one HNSW build (``vector_cosine_ops``,
as the app's per-encoder index) timed with ``maintenance_work_mem`` and
``max_parallel_maintenance_workers`` set as printed, index and table size, and
the peak resident memory of the server's process tree sampled during the build;
then for each ``hnsw.ef_search``: recall@10, queries/s on one connection
(sequential ``ORDER BY v <=> q LIMIT 10``), p50/p95 latency. The first setting is
also built on the first tenth of the rows to measure how build time grows with
N. The output ends with storage and build-time extrapolations to 100M and 1B
vectors and a faiss IVF-PQ estimate on paper (MUSS, seed 004, appendix A).

Differences from the app's index: the app indexes an expression
``(vector::vector(D))`` with ``WHERE encoder_id = ...``; here the column is typed
and there is no predicate. The graph and the distance work are the same.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import setup_django
from _synthetic import MINILM_PARTICIPATION_RATIO, SyntheticCollection
from ann.pgload import ServerMemorySampler, copy_vectors, gb, postmaster_pid, relation_bytes, vector_text

TOP_K = 10
TABLE = "bench_vectors"
PROBE_TABLE = "bench_vectors_probe"


@dataclass(frozen=True)
class BenchConfig:
    vectors: int
    documents: int
    dim: int
    queries: int
    topics: int
    effective_dim: int  # participation ratio of the noise spectrum; >= dim means isotropic
    seed: int
    settings: tuple[tuple[int, int], ...]  # (m, ef_construction)
    ef_search: tuple[int, ...]
    exact_pg_queries: int
    chunk_documents: int
    maintenance_work_mem: str
    parallel_workers: int
    scaling_probe: bool


@dataclass
class GroundTruth:
    """Running exact top-k of every query over the chunks seen so far."""

    queries: np.ndarray  # (q, D) float32, unit norm
    query_documents: np.ndarray  # (q,) document of each held-out query sentence
    scores: np.ndarray = field(init=False)  # (q, k) cosine, best first after finish()
    ids: np.ndarray = field(init=False)  # (q, k) int64
    documents: np.ndarray = field(init=False)  # (q, k) doc_id of each neighbour
    seconds: float = 0.0
    single_query_rate: float = 0.0  # vectors/s of one query's float32 mat-vec (memory-bound, unlike the batch)
    random_pair_cosine: tuple[float, float] = (0.0, 0.0)  # mean, std of query x first-chunk cosines

    def __post_init__(self) -> None:
        count = len(self.queries)
        self.scores = np.full((count, TOP_K), -np.inf, dtype=np.float32)
        self.ids = np.full((count, TOP_K), -1, dtype=np.int64)
        self.documents = np.full((count, TOP_K), -1, dtype=np.int64)

    def update(self, ids: np.ndarray, documents: np.ndarray, vectors: np.ndarray) -> None:
        if self.single_query_rate == 0.0:
            timings = []
            for _ in range(5):
                single_started = time.perf_counter()
                vectors @ self.queries[0]  # (n,)
                timings.append(time.perf_counter() - single_started)
            self.single_query_rate = len(vectors) / min(timings)
        started = time.perf_counter()
        sims = self.queries @ vectors.T  # (q, n)
        if self.random_pair_cosine == (0.0, 0.0):
            self.random_pair_cosine = (float(sims.mean()), float(sims.std()))
        k = min(TOP_K, sims.shape[1])
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]  # (q, k) unordered best of this chunk
        scores = np.concatenate([self.scores, np.take_along_axis(sims, part, 1)], axis=1)  # (q, 2k)
        all_ids = np.concatenate([self.ids, ids[part]], axis=1)  # (q, 2k)
        all_docs = np.concatenate([self.documents, documents[part]], axis=1)  # (q, 2k)
        keep = np.argsort(-scores, axis=1, kind="stable")[:, :TOP_K]  # (q, k)
        self.scores = np.take_along_axis(scores, keep, 1)
        self.ids = np.take_along_axis(all_ids, keep, 1)
        self.documents = np.take_along_axis(all_docs, keep, 1)
        self.seconds += time.perf_counter() - started


def load_collection(raw, config: BenchConfig, collection: SyntheticCollection, truth: GroundTruth) -> dict[str, float]:
    timings = {"generate": 0.0, "copy": 0.0}
    next_report = config.vectors // 5
    with raw.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}, {PROBE_TABLE}")
        cursor.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, doc_id integer NOT NULL, v vector({config.dim}) NOT NULL)")
        started = time.perf_counter()
        for ids, doc_ids, vectors in collection.chunks():
            timings["generate"] += time.perf_counter() - started
            truth.update(ids, doc_ids, vectors)
            copy_started = time.perf_counter()
            copy_vectors(cursor, TABLE, ids, doc_ids, vectors)
            timings["copy"] += time.perf_counter() - copy_started
            if ids[-1] + 1 >= next_report:
                print(f"  loaded {ids[-1] + 1:>10,} vectors", flush=True)
                next_report += config.vectors // 5
            started = time.perf_counter()
        vacuum_started = time.perf_counter()
        cursor.execute(f"VACUUM ANALYZE {TABLE}")
        cursor.execute("CHECKPOINT")
        timings["vacuum"] = time.perf_counter() - vacuum_started
    return timings


def build_index(raw, table: str, m: int, ef_construction: int, config: BenchConfig, pid: int | None) -> dict[str, float]:
    with raw.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {table}_hnsw")
        cursor.execute(f"SET maintenance_work_mem = '{config.maintenance_work_mem}'")
        cursor.execute(f"SET max_parallel_maintenance_workers = {config.parallel_workers}")
        with ServerMemorySampler(pid) as sampler:
            baseline_pss = sampler.sample()[1]
            started = time.perf_counter()
            cursor.execute(
                f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (v vector_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction})"
            )
            seconds = time.perf_counter() - started
        cursor.execute("SELECT pg_relation_size(%s)", [f"{table}_hnsw"])
        index_bytes = int(cursor.fetchone()[0])
    return {
        "seconds": seconds,
        "index_bytes": index_bytes,
        "baseline_pss": baseline_pss,
        "peak_rss": sampler.peak_rss,
        "peak_pss": sampler.peak_pss,
        "processes": sampler.peak_processes,
    }


def run_queries(cursor, query_texts: list[str], sql: str) -> tuple[list[list[int]], np.ndarray]:
    results, latencies = [], []
    for text in query_texts:
        started = time.perf_counter()
        cursor.execute(sql, [text])
        rows = cursor.fetchall()
        latencies.append(time.perf_counter() - started)
        results.append([int(r[0]) for r in rows])
    return results, np.array(latencies)


def recall_at_k(results: list[list[int]], truth_ids: np.ndarray) -> float:
    hits = [len(set(found[:TOP_K]) & set(true.tolist())) for found, true in zip(results, truth_ids)]
    return float(np.sum(hits)) / truth_ids.size


def plan_uses_index(cursor, sql: str, text: str) -> bool:
    cursor.execute("EXPLAIN " + sql, [text])
    return any("hnsw" in row[0] for row in cursor.fetchall())


def parse_settings(text: str) -> tuple[tuple[int, int], ...]:
    try:
        pairs = tuple((int(a), int(b)) for a, b in (item.split(":") for item in text.split(",")))
    except ValueError:
        raise ValueError(f"--settings must look like 8:32,16:64 (m:ef_construction), got {text!r}") from None
    return pairs


def parse_args() -> BenchConfig:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--topics", type=int, default=0, help="default: documents / 100")
    parser.add_argument(
        "--effective-dim",
        type=int,
        default=MINILM_PARTICIPATION_RATIO,
        help="participation ratio of the noise spectrum (default: MiniLM's); --dim or more: isotropic",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settings", default="8:32,16:64", help="m:ef_construction,...")
    parser.add_argument("--ef-search", default="10,40,100,200")
    parser.add_argument("--exact-pg-queries", type=int, default=5)
    parser.add_argument("--chunk-documents", type=int, default=5_000)
    parser.add_argument("--maintenance-work-mem", default="4GB")
    parser.add_argument("--parallel-workers", type=int, default=1, help="max_parallel_maintenance_workers")
    parser.add_argument("--no-scaling-probe", action="store_true", help="skip the build on a tenth of the rows")
    args = parser.parse_args()
    if min(args.vectors, args.documents, args.dim, args.queries) <= 0:
        parser.error("--vectors, --documents, --dim and --queries must be positive")
    if args.queries > args.documents:
        parser.error("--queries cannot exceed --documents (one held-out sentence per distinct document)")
    return BenchConfig(
        vectors=args.vectors,
        documents=args.documents,
        dim=args.dim,
        queries=args.queries,
        topics=args.topics or max(1, args.documents // 100),
        effective_dim=args.effective_dim,
        seed=args.seed,
        settings=parse_settings(args.settings),
        ef_search=tuple(int(x) for x in args.ef_search.split(",")),
        exact_pg_queries=args.exact_pg_queries,
        chunk_documents=args.chunk_documents,
        maintenance_work_mem=args.maintenance_work_mem,
        parallel_workers=args.parallel_workers,
        scaling_probe=not args.no_scaling_probe,
    )


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    config = parse_args()
    run_started = time.perf_counter()
    setup_django()
    from django.db import connection

    connection.ensure_connection()
    raw = connection.connection  # psycopg 3 connection, autocommit
    notices: list[str] = []
    raw.add_notice_handler(  # e.g. pgvector's "hnsw graph no longer fits into maintenance_work_mem"
        lambda diag: (
            None
            if "does not exist, skipping" in (diag.message_primary or "")
            else notices.append(f"{diag.severity}: {diag.message_primary}")
        )
    )
    with raw.cursor() as cursor:
        cursor.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        version, pgvector_version = cursor.fetchone()
        cursor.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name IN "
            "('shared_buffers', 'max_parallel_workers_per_gather', 'max_worker_processes', 'work_mem')"
        )
        server_settings = {name: f"{setting}{' x ' + unit if unit else ''}" for name, setting, unit in cursor.fetchall()}
        pid = postmaster_pid(cursor)

    print(
        f"pgvector HNSW at scale — {version.split(',')[0]}, pgvector {pgvector_version}, "
        f"{psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM"
    )
    print(
        f"collection: {config.vectors:,} vectors x {config.dim} dims (float32), {config.documents:,} documents, "
        f"{config.topics:,} topics, seed {config.seed}; noise spectrum participation ratio "
        f"{min(config.effective_dim, config.dim)} of {config.dim}; {config.queries} held-out queries; top-{TOP_K} by cosine"
    )
    print(
        f"server: {server_settings}; index builds: maintenance_work_mem={config.maintenance_work_mem}, "
        f"max_parallel_maintenance_workers={config.parallel_workers}"
    )

    collection = SyntheticCollection(config)
    queries, query_documents = collection.held_out_queries()
    truth = GroundTruth(queries, query_documents)
    load = load_collection(raw, config, collection, truth)
    query_texts = [vector_text(q) for q in queries]
    with raw.cursor() as cursor:
        table_bytes = relation_bytes(cursor, TABLE)
    own_doc = float(np.mean(truth.documents == query_documents[:, None]))
    scan_rate = config.queries * config.vectors / truth.seconds  # query-vector dot products per second
    print(
        f"load: generate {load['generate']:.1f} s, COPY {load['copy']:.1f} s "
        f"({config.vectors / load['copy']:,.0f} rows/s), VACUUM ANALYZE + CHECKPOINT {load['vacuum']:.1f} s; "
        f"table {gb(table_bytes)} ({table_bytes / config.vectors:,.0f} B/vector incl. primary key)"
    )
    print(
        f"exact top-{TOP_K} in NumPy: {truth.seconds:.1f} s ({scan_rate / 1e6:,.1f} M vector dot products/s); "
        f"cosine of true neighbour 1 / 10: {truth.scores[:, 0].mean():.3f} / {truth.scores[:, -1].mean():.3f}; "
        f"{own_doc:.0%} of true neighbours are in the query's own document; one query's float32 mat-vec: "
        f"{truth.single_query_rate / 1e6:,.1f} M vectors/s; query x vector cosine mean {truth.random_pair_cosine[0]:.3f}, "
        f"sd {truth.random_pair_cosine[1]:.3f}"
    )

    sql = f"SELECT id FROM {TABLE} ORDER BY v <=> %s::vector LIMIT {TOP_K}"
    with raw.cursor() as cursor:
        cursor.execute("SET enable_indexscan = off")
        exact_texts = query_texts[: config.exact_pg_queries]
        run_queries(cursor, exact_texts[:1], sql)  # warm the cache
        exact_results, exact_latency = run_queries(cursor, exact_texts, sql)
        cursor.execute("RESET enable_indexscan")
    exact_recall = recall_at_k(exact_results, truth.ids[: len(exact_texts)])
    print(
        f"exact scan in PostgreSQL (no index, parallel seq scan): {np.median(exact_latency) * 1000:,.0f} ms/query "
        f"median of {len(exact_texts)}; agreement with NumPy top-{TOP_K}: {exact_recall:.3f}"
    )

    builds: list[tuple[tuple[int, int], dict[str, float]]] = []
    rows: list[str] = []
    for m, ef_construction in config.settings:
        notices.clear()
        build = build_index(raw, TABLE, m, ef_construction, config, pid)
        builds.append(((m, ef_construction), build))
        print(
            f"built m={m}, ef_construction={ef_construction}: {build['seconds']:,.1f} s, index {gb(build['index_bytes'])}"
            + (f"; server notices: {notices}" if notices else ""),
            flush=True,
        )
        with raw.cursor() as cursor:
            if not plan_uses_index(cursor, sql, query_texts[0]):
                raise RuntimeError("the planner does not use the HNSW index; the figures would be meaningless")
            cursor.execute(f"SET hnsw.ef_search = {max(config.ef_search)}")
            run_queries(cursor, query_texts, sql)  # warm the index pages
            for ef_search in config.ef_search:
                cursor.execute(f"SET hnsw.ef_search = {ef_search}")
                results, latency = run_queries(cursor, query_texts, sql)
                rows.append(
                    f"{m:>3} {ef_construction:>6} {ef_search:>6} | {recall_at_k(results, truth.ids):9.3f} "
                    f"{len(latency) / latency.sum():9,.0f} {np.percentile(latency, 50) * 1000:8.2f} "
                    f"{np.percentile(latency, 95) * 1000:8.2f}"
                )
            cursor.execute("RESET hnsw.ef_search")
        with raw.cursor() as cursor:
            cursor.execute(f"DROP INDEX {TABLE}_hnsw")  # one index at a time: fair cache, bounded disk

    probe = None
    if config.scaling_probe and config.vectors >= 10_000:
        m, ef_construction = config.settings[0]
        probe_rows = config.vectors // 10
        with raw.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {PROBE_TABLE} AS SELECT * FROM {TABLE} WHERE id < {probe_rows}")
            cursor.execute(f"VACUUM ANALYZE {PROBE_TABLE}")
        probe = (probe_rows, build_index(raw, PROBE_TABLE, m, ef_construction, config, pid))

    print()
    print(
        f"HNSW builds ({config.vectors:,} x {config.dim}; maintenance_work_mem={config.maintenance_work_mem}, "
        f"max_parallel_maintenance_workers={config.parallel_workers})"
    )
    header = f"{'m':>3} {'ef_c':>6} | {'build s':>9} {'index':>10} {'B/vec':>7} | {'PSS before':>10} {'PSS peak':>10} {'RSS sum peak':>13} {'procs':>5}"
    print(header)
    print("-" * len(header))
    for (m, ef_construction), b in builds:
        print(
            f"{m:>3} {ef_construction:>6} | {b['seconds']:9,.1f} {gb(b['index_bytes']):>10} {b['index_bytes'] / config.vectors:7,.0f} | "
            f"{gb(b['baseline_pss']):>10} {gb(b['peak_pss']):>10} {gb(b['peak_rss']):>13} {b['processes']:>5.0f}"
        )
    print(
        "server memory: summed over the postmaster's process tree, sampled every 0.5 s during CREATE INDEX; PSS splits "
        "shared pages (shared_buffers, the build's shared graph) among processes, the RSS sum counts them in each one."
    )
    print()
    print(f"Queries ({config.queries} held-out sentences, one connection, sequential, after one warm-up pass)")
    header = f"{'m':>3} {'ef_c':>6} {'ef_s':>6} | {'recall@10':>9} {'queries/s':>9} {'p50 ms':>8} {'p95 ms':>8}"
    print(header)
    print("-" * len(header))
    print("\n".join(rows))
    print(
        f"{'exact (seq scan)':>17} | {exact_recall:9.3f} {len(exact_latency) / exact_latency.sum():9,.2f} "
        f"{np.percentile(exact_latency, 50) * 1000:8.0f} {np.percentile(exact_latency, 95) * 1000:8.0f}"
    )

    print()
    print("Beyond one server (extrapolated from the figures above)")
    (m0, ef0), first = builds[0]
    exponent = 1.0
    if probe is not None:
        probe_rows, probe_build = probe
        exponent = math.log(first["seconds"] / probe_build["seconds"]) / math.log(config.vectors / probe_rows)
        print(
            f"- build-time growth, m={m0}/ef_c={ef0}: {probe_rows:,} rows {probe_build['seconds']:.1f} s -> "
            f"{config.vectors:,} rows {first['seconds']:.1f} s, i.e. time ~ N^{exponent:.2f}"
        )
    raw_bytes = 4 * config.dim
    for (m, _ef_construction), b in builds:
        per_vector = (table_bytes + b["index_bytes"]) / config.vectors
        for target in (10**8, 10**9):
            hours = b["seconds"] * (target / config.vectors) ** max(exponent, 1.0) / 3600
            print(
                f"- m={m:<2}: {per_vector:,.0f} B/vector (table {table_bytes / config.vectors:,.0f} + index "
                f"{b['index_bytes'] / config.vectors:,.0f}) -> {target:>13,} vectors: {gb(per_vector * target):>9} on disk, "
                f"index alone {gb(b['index_bytes'] / config.vectors * target)} to keep in RAM; build ~{hours:,.0f} h "
                f"at the measured rate ({config.parallel_workers + 1} processes)"
            )
    print(f"- raw float32 vectors alone are {raw_bytes} B; pgvector halfvec would halve table and index vector storage.")
    print(
        "- partition by corpus: each corpus its own table partition and HNSW index (the app already keeps one partial "
        "index per encoder); a query searches one partition, so per-partition RAM and build time follow the rows "
        "above with N = corpus size, and partitions can live on separate servers."
    )
    ivf_cells = 32_768
    for label, code_bytes in (("faiss IVF-PQ, PQ64 (64 B codes)", 64), ("MUSS setup: PCA 512 + 8-bit SQ", 512)):
        total = (code_bytes + 8) * 10**9 + ivf_cells * config.dim * 4
        scanned = 10**9 * 16 / ivf_cells
        print(
            f"- {label} + 8 B ids, {ivf_cells:,} IVF cells, nprobe 16: 1B vectors -> {gb(total)} in RAM; "
            f"a query scans ~{scanned:,.0f} codes ({scanned * code_bytes / 1e6:,.0f} MB); for scale, one float32 mat-vec over that many "
            f"{config.dim}-d vectors takes {scanned / truth.single_query_rate * 1000:,.0f} ms here"
        )
    print(
        "  (seed 004, appendix A: LASER 1024-d -> PCA 512 + random rotation, 8-bit scalar quantisation, faiss "
        "IVF with 32,768 cells, nprobe 16, top-8, over ~1 billion English sequences)"
    )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nbench process peak RSS {peak_mb:,.0f} MB; total runtime {time.perf_counter() - run_started:,.0f} s")


if __name__ == "__main__":
    main()
