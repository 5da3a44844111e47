"""The memory an HNSW index build gets: pgvector builds the graph in memory up to ``maintenance_work_mem`` and
inserts the rest on disk, many times slower (the embedded server's 64 MB hold about 20,000 384-dimensional vectors).

The embedding job's sentence index and the mining jobs' document and sequence indexes raise it for their build.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection


def index_build_memory_mb(vectors: int, dimensions: int) -> int:
    """``maintenance_work_mem`` in MB for building an HNSW graph of ``vectors`` in memory.

    The graph takes about 1.5 x (4 bytes a dimension + 512 bytes of neighbour lists) a vector; capped by
    EMBEDDING_INDEX_BUILD_MEMORY_MB.
    """
    return min(int(vectors * 1.5 * (4 * dimensions + 512) / 2**20) + 1, int(settings.EMBEDDING_INDEX_BUILD_MEMORY_MB))


@contextmanager
def build_memory(cursor, needed_mb: int) -> Iterator[None]:
    """``maintenance_work_mem`` raised to ``needed_mb`` for the build run inside (never lowered: a lab may ALTER ROLE it
    higher): inside a transaction block until its end, else for the session until the build is done."""
    cursor.execute("SELECT setting::bigint / 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'")  # in kB there
    before_mb = int(cursor.fetchone()[0])
    local = connection.in_atomic_block
    raise_memory = needed_mb > before_mb
    if raise_memory:
        cursor.execute(f"SET {'LOCAL' if local else 'SESSION'} maintenance_work_mem = '{int(needed_mb)}MB'")
    try:
        yield
    finally:
        if raise_memory and not local:
            cursor.execute(f"SET maintenance_work_mem = '{before_mb}MB'")
