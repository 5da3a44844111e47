"""Nearest-neighbour search: pgvector HNSW against faiss (HNSW, IVF-PQ) on the same vectors and queries, in one run.

    .venv/bin/pip install -r bench/requirements.txt      # faiss-cpu: the bench's peer, never the app's dependency
    .venv/bin/python bench/ann_vs_faiss.py [--vectors 200000] [--queries 300]
        [--pg-indexes vector:16,vector:32,halfvec:16,bit:16] [--faiss-hnsw-m 16,32]

A quick check: ``--vectors 20000`` (a few minutes).

Vectors: bench/hnsw_scale.py's synthetic collection (``_synthetic.py``: documents of about 10
sentences, noise with MiniLM's spectrum, 109 effective dimensions; held-out query sentences), not
real sentence embeddings, which cost too much to encode at this scale on CPU. Ground truth: exact
top-10 by faiss IndexFlatIP on the unit vectors (cosine).

pgvector (the embedded PostgreSQL the app uses, ``bench/_django.py``, or ``DATABASE_URL``): one
table ``ann_vectors(id, doc_id, v vector(D))``, one HNSW index at a time (``vector_cosine_ops``;
``(v::halfvec(D))``; ``(binary_quantize(v)::bit(D))`` with Hamming candidates re-ranked by cosine on
the float32 rows), ef_construction max(64, 2 m), built with ``--build-threads`` processes; sweep of
``hnsw.ef_search`` (bit: candidates) on one connection; then all queries over 1, 2, 4 connections.
With the first index, queries filtered to a tenth of the rows with ``hnsw.iterative_scan`` off,
relaxed_order and strict_order (what the app's mining sets).

faiss: IndexHNSWFlat (M, the same efConstruction, efSearch sweep) and IndexIVFPQ (nlist ~2 sqrt(n),
``--pq-m`` bytes per code, nprobe sweep), alone and re-ranked exactly (IndexRefineFlat); built on
``--build-threads`` OpenMP threads; sweep one query per call on one thread, then one batch on 1 and N
(each repeated until it has run 0.5 s).

Reported: build time, index size (pg_relation_size; faiss's serialized index, which like pgvector's
HNSW holds the vectors it ranks with), queries/s at recall@10 0.90 and 0.95 and the pgvector / faiss
ratio. Exits non-zero on any error (e.g. a planner that ignores the index).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # spinning OpenMP threads lose badly on a shared 2-core machine
import faiss
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import setup_django
from _synthetic import MINILM_PARTICIPATION_RATIO
from ann import faiss_side, pgvector_side, report
from ann.collection import CollectionConfig, build_collection
from ann.pgload import gb, vector_text


def integers(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", "--n", type=int, default=200_000)
    parser.add_argument("--documents", type=int, default=0, help="default: vectors / 10")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--effective-dim", type=int, default=MINILM_PARTICIPATION_RATIO)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pg-indexes", default="vector:16,vector:32,halfvec:16,bit:16", help="KIND:M,... KIND vector, halfvec or bit")
    parser.add_argument("--ef-search", type=integers, default=(10, 20, 40, 80, 120, 200, 400))
    parser.add_argument("--candidates", type=integers, default=(20, 40, 80, 160, 320, 640, 1000), help="bit: rows re-ranked")
    parser.add_argument("--connections", type=integers, default=(1, 2, 4))
    parser.add_argument("--faiss-hnsw-m", type=integers, default=(16, 32))
    parser.add_argument("--nlist", type=int, default=0, help="IVF cells; default a power of two near 2 sqrt(n)")
    parser.add_argument("--pq-m", type=int, default=64, help="PQ sub-quantizers = bytes per code")
    parser.add_argument("--nprobe", type=integers, default=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    parser.add_argument("--rerank-factor", type=int, default=16, help="IVF-PQ re-ranks factor x 10 candidates; 0: no re-rank")
    parser.add_argument("--build-threads", type=int, default=2, help="faiss OpenMP threads = PostgreSQL leader + parallel workers")
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument("--filter-modulus", type=int, default=10, help="filtered queries keep doc_id %% this = 0")
    args = parser.parse_args()
    args.documents = args.documents or max(1, args.vectors // 10)
    if min(args.vectors, args.documents, args.dim, args.queries, args.build_threads, args.filter_modulus) <= 0:
        parser.error("--vectors, --documents, --dim, --queries, --build-threads and --filter-modulus must be positive")
    if args.queries > args.documents or args.documents > args.vectors:
        parser.error("need --queries <= --documents <= --vectors")
    try:
        args.pg_indexes = pgvector_side.parse_pg_indexes(args.pg_indexes)
    except ValueError as error:
        parser.error(str(error))
    return args


def database_params() -> dict:
    from django.db import connection

    settings = connection.settings_dict
    params = {"dbname": settings["NAME"], "user": settings["USER"], "password": settings["PASSWORD"]}
    params.update({"host": settings["HOST"], "port": settings["PORT"] or None})
    return {key: value for key, value in params.items() if value}


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    args = parse_args()
    run_started = time.perf_counter()
    setup_django()
    params = database_params()
    config = CollectionConfig(
        args.vectors, args.documents, args.dim, args.queries, max(1, args.documents // 100), args.effective_dim, args.seed
    )
    with pgvector_side.connect(params) as connection:
        version, pgvector_version, shared_buffers = connection.execute(
            "SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector'), current_setting('shared_buffers')"
        ).fetchone()
    print(
        f"ANN: pgvector vs faiss — {version.split(',')[0]}, pgvector {pgvector_version}, faiss {faiss.__version__} "
        f"({faiss.get_compile_options().strip()}), {psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"shared_buffers {shared_buffers}, load average at start {', '.join(f'{x:.2f}' for x in psutil.getloadavg())}"
    )
    collection = build_collection(config, args.filter_modulus)
    print(
        f"collection: {args.vectors:,} x {args.dim} synthetic (bench/_synthetic.py, {args.documents:,} documents, "
        f"{config.topics:,} topics, effective dim {min(args.effective_dim, args.dim)}), {args.queries} held-out queries; "
        f"generated in {collection.generate_seconds:.1f} s, exact top-10 (faiss IndexFlatIP) in {collection.truth_seconds:.1f} s",
        flush=True,
    )
    with pgvector_side.connect(params) as connection:
        load_seconds, table_bytes = pgvector_side.load_table(connection, collection)
        floor = pgvector_side.round_trip_rate(connection, [vector_text(q) for q in collection.queries])
    print(
        f"pgvector table: loaded in {load_seconds:.1f} s, {gb(table_bytes)}; round trip of 'SELECT vector_dims(%s::vector)': {floor:,.0f} queries/s",
        flush=True,
    )

    results, pg_filtered, faiss_filtered = [], [], []
    for index in args.pg_indexes:
        sweep = args.candidates if index.kind == "bit" else args.ef_search
        result = pgvector_side.measure(
            params, collection, index, sweep, args.connections, args.maintenance_work_mem, args.build_threads - 1
        )
        results.append(result)
        print(f"  pgvector {result.name}: built in {result.build_seconds:.1f} s, {gb(result.index_bytes)}", flush=True)
        if index is args.pg_indexes[0]:
            pg_filtered = pgvector_side.filtered(params, collection, index, (40, 100, 200))
        pgvector_side.drop(params, index)
    for m in args.faiss_hnsw_m:
        result, faiss_index = faiss_side.hnsw(collection, m, args.ef_search, args.build_threads)
        results.append(result)
        print(f"  faiss {result.name}: built in {result.build_seconds:.1f} s, {gb(result.index_bytes)}", flush=True)
        if m == args.faiss_hnsw_m[0]:
            faiss_filtered = faiss_side.hnsw_filtered(faiss_index, collection, (40, 100, 200))
        del faiss_index
    nlist = args.nlist or faiss_side.default_nlist(args.vectors)
    for result in faiss_side.ivf_pq(collection, nlist, args.pq_m, args.nprobe, args.rerank_factor, args.build_threads):
        results.append(result)
        print(f"  faiss {result.name}: built in {result.build_seconds:.1f} s, {gb(result.index_bytes)}", flush=True)

    report.print_sweeps(results)
    report.print_summary(results)
    report.print_ratios(results)
    report.print_parallel(results)
    report.print_filtered(pg_filtered, faiss_filtered, args.filter_modulus, results[0].name, f"HNSW M{args.faiss_hnsw_m[0]}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\npgvector table {gb(table_bytes)} ({table_bytes / args.vectors:,.0f} B/vector) besides its indexes; "
        f"raw float32 vectors {4 * args.dim} B, halfvec {2 * args.dim} B, bit {args.dim // 8} B"
    )
    print(
        f"bench process peak RSS {peak_mb:,.0f} MB; load average at end {', '.join(f'{x:.2f}' for x in psutil.getloadavg())}; "
        f"total runtime {time.perf_counter() - run_started:,.0f} s"
    )


if __name__ == "__main__":
    main()
