"""A large load into a table under a partial HNSW index: the index dropped first and built again after the load.

pgvector puts a row into an HNSW graph by searching the graph for the row's neighbours, a row at a time, on the
writing connection. In scratch timings on the 2-core machine of docs/benchmarks.md ("A second corpus under the
index"), 30,000 clustered 384-dimensional vectors (the benches' stand-in's shape) went into a table under a partial
index over 30,000 in 64.8 s, against 0.4 s without the index and 28.6 s to build it afterwards over all 90,000; random
vectors, the worst case, 323 s against 0.9 + 126 s at 50,000. A second corpus embedded with the same encoder, or
mined with it, paid that on PostgreSQL's core, about as long as the encoder itself takes a vector. So a load that adds
at least ``INDEX_REBUILD_SHARE`` of the rows the index holds drops it first; the load's end builds it again over every
row, as it builds a missing one (the embedding run's end, the LHA prepare). Searches in between go without the index:
exact, slower, and right.
"""

from __future__ import annotations

from django.db import connection

INDEX_REBUILD_SHARE = 0.25  # a vector's share of a build costs about a seventh of its insert (above): past a quarter, rebuild


def indexed_rows(name: str) -> int | None:
    """The rows of the valid index ``name`` as PostgreSQL last counted them (at its build, or a VACUUM or ANALYZE since);
    None without a valid index of that name, or when PostgreSQL has no count of it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reltuples FROM pg_class AS c JOIN pg_index AS i ON i.indexrelid = c.oid WHERE c.relname = %s AND i.indisvalid",
            [name],
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] >= 0 else None


def index_make_room(name: str, adding: int) -> bool:
    """Drop the index ``name`` before a load of ``adding`` rows when they are at least ``INDEX_REBUILD_SHARE`` of the rows
    it holds; True when it was dropped (the caller builds it again after the load)."""
    rows = indexed_rows(name)
    if rows is None or adding <= 0 or adding < INDEX_REBUILD_SHARE * rows:
        return False
    index_drop(name)
    return True


def index_drop(name: str) -> None:
    """``DROP INDEX IF EXISTS``, ``CONCURRENTLY`` outside a transaction block (where it cannot run), so that readers of the
    table are not blocked; it waits for them instead: callers run it under their job's cancel."""
    concurrently = "" if connection.in_atomic_block else "CONCURRENTLY"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {concurrently} IF EXISTS {connection.ops.quote_name(name)}")


def index_abandoned(name: str) -> bool:
    """The index exists, invalid, and no build of it is in progress: what a cancelled ``CONCURRENTLY`` build or drop
    leaves, which a ``CREATE INDEX IF NOT EXISTS`` would skip for good. (Another build of the same index is invalid until
    it ends: that one is left to finish.)"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s AND NOT i.indisvalid "
            "AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid)",
            [name],
        )
        return cursor.fetchone() is not None
