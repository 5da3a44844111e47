"""pgvector on the bench's vectors: HNSW over vector, halfvec and binary-quantized (re-ranked) expressions.

Every query goes through its own psycopg connection (autocommit, psycopg's default server-side
prepared statements after 5 runs), not Django's, which disables prepared statements.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import psycopg

from ann.collection import TOP_K, Collection, recall_at_k
from ann.pgload import copy_vectors, relation_bytes, vector_text
from ann.results import MethodResult, SweepPoint, ef_construction_for

TABLE = "ann_vectors"
LOAD_ROWS = 50_000
MAX_EF_SEARCH = 1000  # pgvector's limit for hnsw.ef_search


@dataclass(frozen=True)
class PgIndex:
    """One HNSW index: ``kind`` vector (float32), halfvec (float16 expression) or bit (binary_quantize + re-rank)."""

    kind: str
    m: int
    ef_construction: int

    @property
    def name(self) -> str:
        return f"{TABLE}_{self.kind}_m{self.m}"

    @property
    def label(self) -> str:
        return {"vector": "HNSW vector", "halfvec": "HNSW halfvec", "bit": "HNSW bit + re-rank"}[self.kind] + f" m{self.m}"

    def create_sql(self, dim: int) -> str:
        expression, ops = {
            "vector": ("v", "vector_cosine_ops"),
            "halfvec": (f"(v::halfvec({dim}))", "halfvec_cosine_ops"),
            "bit": (f"(binary_quantize(v)::bit({dim}))", "bit_hamming_ops"),
        }[self.kind]
        return f"CREATE INDEX {self.name} ON {TABLE} USING hnsw ({expression} {ops}) WITH (m = {self.m}, ef_construction = {self.ef_construction})"

    def query_sql(self, dim: int, candidates: int = 0, where: str = "") -> str:
        if self.kind == "vector":
            return f"SELECT id FROM {TABLE} {where} ORDER BY v <=> %(q)s::vector LIMIT {TOP_K}"
        if self.kind == "halfvec":
            return f"SELECT id FROM {TABLE} {where} ORDER BY v::halfvec({dim}) <=> %(q)s::halfvec({dim}) LIMIT {TOP_K}"
        return (  # Hamming distance on the sign bits finds candidates; cosine on the float32 rows re-ranks them
            f"SELECT id FROM (SELECT id, v FROM {TABLE} {where} ORDER BY binary_quantize(v)::bit({dim}) <~> "
            f"binary_quantize(%(q)s::vector)::bit({dim}) LIMIT {candidates}) AS candidates ORDER BY v <=> %(q)s::vector LIMIT {TOP_K}"
        )


def parse_pg_indexes(text: str) -> tuple[PgIndex, ...]:
    """``vector:16,halfvec:16,bit:16`` -> indexes; ef_construction max(64, 2 m), as faiss's efConstruction."""
    indexes = []
    for item in text.split(","):
        kind, _, m = item.partition(":")
        if kind not in ("vector", "halfvec", "bit") or not m.isdigit():
            raise ValueError(f"--pg-indexes: {item!r} is not KIND:M with KIND vector, halfvec or bit (e.g. vector:16)")
        indexes.append(PgIndex(kind, int(m), ef_construction_for(int(m))))
    return tuple(indexes)


def connect(params: dict) -> psycopg.Connection:
    return psycopg.connect(**params, autocommit=True)


def load_table(connection: psycopg.Connection, collection: Collection) -> tuple[float, int]:
    """(seconds, table bytes) to create and fill the table, VACUUM ANALYZE and CHECKPOINT."""
    dim = collection.vectors.shape[1]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cursor.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, doc_id integer NOT NULL, v vector({dim}) NOT NULL)")
        for start in range(0, len(collection.ids), LOAD_ROWS):
            rows = slice(start, start + LOAD_ROWS)
            copy_vectors(cursor, TABLE, collection.ids[rows], collection.doc_ids[rows], collection.vectors[rows])
        cursor.execute(f"VACUUM ANALYZE {TABLE}")
        cursor.execute("CHECKPOINT")
        return time.perf_counter() - started, relation_bytes(cursor, TABLE)


def run_queries(cursor, sql: str, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
    found, latencies = [], np.empty(len(texts))
    for row, text in enumerate(texts):
        started = time.perf_counter()
        cursor.execute(sql, {"q": text})
        found.append([int(r[0]) for r in cursor.fetchall()])
        latencies[row] = time.perf_counter() - started
    return found, latencies


def round_trip_rate(connection: psycopg.Connection, texts: list[str]) -> float:
    """Queries/s of ``SELECT vector_dims(%s::vector)``: the client, protocol and parsing cost every query pays."""
    with connection.cursor() as cursor:
        run_queries(cursor, "SELECT vector_dims(%(q)s::vector)", texts)
        _found, latencies = run_queries(cursor, "SELECT vector_dims(%(q)s::vector)", texts)
    return len(texts) / float(latencies.sum())


def set_search(cursor, index: PgIndex, parameter: int, iterative: str = "off") -> None:
    """Session settings for one sweep point: for bit, ef_search is at least the candidates re-ranked."""
    ef_search = min(max(parameter, 40), MAX_EF_SEARCH) if index.kind == "bit" else parameter
    cursor.execute(f"SET hnsw.ef_search = {ef_search}")
    cursor.execute(f"SET hnsw.iterative_scan = {iterative}")


def build(connection: psycopg.Connection, index: PgIndex, dim: int, maintenance_work_mem: str, workers: int) -> float:
    with connection.cursor() as cursor:
        cursor.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
        cursor.execute(f"SET max_parallel_maintenance_workers = {workers}")
        started = time.perf_counter()
        cursor.execute(index.create_sql(dim))
        return time.perf_counter() - started


def check_plan(cursor, sql: str, text: str, index: PgIndex) -> None:
    cursor.execute("EXPLAIN " + sql, {"q": text})
    plan = "\n".join(row[0] for row in cursor.fetchall())
    if index.name not in plan:
        short = re.sub(r"'\[[^]]*\]'", "'[...]'", plan)
        raise RuntimeError(f"the planner does not use {index.name}; the figures would be meaningless:\n{short}")


def parallel_rates(
    params: dict, index: PgIndex, dim: int, parameter: int, texts: list[str], connections: tuple[int, ...]
) -> dict[int, float]:
    """Queries/s with all queries shared over ``n`` connections, one thread each, for each n."""
    sql = index.query_sql(dim, candidates=parameter)
    rates = {}
    for count in connections:
        pool = [connect(params) for _ in range(count)]
        try:
            for conn in pool:
                with conn.cursor() as cursor:
                    set_search(cursor, index, parameter)
                    run_queries(cursor, sql, texts[:20])  # warm up, and prepare the statement

            def work(conn: psycopg.Connection, share: list[str]) -> None:
                with conn.cursor() as cursor:
                    run_queries(cursor, sql, share)

            with ThreadPoolExecutor(count) as executor:
                started = time.perf_counter()
                list(executor.map(work, pool, [texts[i::count] for i in range(count)]))
                rates[count] = len(texts) / (time.perf_counter() - started)
        finally:
            for conn in pool:
                conn.close()
    return rates


def measure(
    params: dict,
    collection: Collection,
    index: PgIndex,
    sweep: tuple[int, ...],
    connections: tuple[int, ...],
    maintenance_work_mem: str,
    workers: int,
) -> MethodResult:
    """Build ``index``, sweep ef_search (bit: re-rank candidates), time parallel queries; the index is kept."""
    dim = collection.vectors.shape[1]
    texts = [vector_text(q) for q in collection.queries]
    with connect(params) as connection:
        seconds = build(connection, index, dim, maintenance_work_mem, workers)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_relation_size(%s)", [index.name])
            size = int(cursor.fetchone()[0])
            parameter_name = "re-rank candidates (= ef_search)" if index.kind == "bit" else "ef_search"
            result = MethodResult(
                "pgvector",
                index.label,
                parameter_name,
                seconds,
                size,
                len(collection.vectors),
                notes=f"ef_construction {index.ef_construction}",
            )
            values = tuple(v for v in sweep if v <= MAX_EF_SEARCH)
            check_plan(cursor, index.query_sql(dim, candidates=values[0]), texts[0], index)
            for value in values:
                sql = index.query_sql(dim, candidates=value)
                set_search(cursor, index, value)
                run_queries(cursor, sql, texts[:20])  # warm up
                found, latencies = run_queries(cursor, sql, texts)
                result.points.append(SweepPoint.from_latencies(value, recall_at_k(found, collection.truth), latencies))
    result.parallel_parameter = result.first_parameter_reaching(0.95)
    result.parallel = parallel_rates(params, index, dim, result.parallel_parameter, texts, connections)
    return result


def drop(params: dict, index: PgIndex) -> None:
    with connect(params) as connection:
        connection.execute(f"DROP INDEX IF EXISTS {index.name}")


def filtered(
    params: dict, collection: Collection, index: PgIndex, ef_search: tuple[int, ...]
) -> list[tuple[str, int, float, float, float]]:
    """(iterative_scan, ef_search, recall@10, mean rows returned, queries/s) for queries with a filter the index cannot see."""
    dim = collection.vectors.shape[1]
    texts = [vector_text(q) for q in collection.queries]
    sql = index.query_sql(dim, where=f"WHERE doc_id %% {collection.filter_modulus} = 0")
    rows = []
    with connect(params) as connection, connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # small tables: the planner prefers filter + sort; the index path is measured
        check_plan(cursor, sql, texts[0], index)
        for mode in ("off", "relaxed_order", "strict_order"):
            for value in ef_search:
                set_search(cursor, index, value, iterative=mode)
                found, latencies = run_queries(cursor, sql, texts)
                returned = float(np.mean([len(f) for f in found]))
                rows.append((mode, value, recall_at_k(found, collection.filter_truth), returned, len(texts) / float(latencies.sum())))
    return rows
