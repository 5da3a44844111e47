"""Reading a MUSS job's stored sequence vectors without the ORM: binary COPY, pgvector's binary format.

The ORM parses each vector from its text ("[0.1,0.2,...]"), 384 floats in Python a row, which was a quarter of
building a job's faiss index at 30,000 sequences (docs/benchmarks.md, "Mining at scale").
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from alignment.copying import unpacked_halves, vector_cursor
from alignment.mining.models import MiningJob, MiningSequence


def stored_rows(
    job: MiningJob, hybrid: bool = False, *, every: int = 1, after: int = -1, limit: int | None = None, packed: bool = False
) -> Iterator[tuple]:
    """(index, pgvector HalfVector[, SparseVector]) of the job's sequences in index order, streamed (bounded memory);
    ``every``: only each ``every``-th sequence (a training sample); ``after``, ``limit``: the first ``limit`` with an
    index above ``after``; ``packed``: each vector as its binary bytes (:func:`~alignment.copying.unpacked_halves`,
    :func:`~alignment.copying.unpacked_sparse`).
    The connection runs nothing else until the stream ends."""
    table = MiningSequence._meta.db_table
    columns, types = ("index, vector, lexical", ["int4", "halfvec", "sparsevec"]) if hybrid else ("index, vector", ["int4", "halfvec"])
    where = (
        f"job_id = {int(job.pk)}"
        + (f" AND index % {int(every)} = 0" if every > 1 else "")
        + (f" AND index > {int(after)}" if after >= 0 else "")
    )
    query = f"SELECT {columns} FROM {table} WHERE {where} ORDER BY index" + (f" LIMIT {int(limit)}" if limit is not None else "")
    with (
        vector_cursor(packed_halves=packed, packed_sparse=packed) as cursor,
        cursor.copy(f"COPY ({query}) TO STDOUT (FORMAT BINARY)") as copy,
    ):
        copy.set_types(types)
        yield from copy.rows()


CHUNK = 20_000  # stored vectors read at a time to build an index (15 MB as stored, 30 MB as float32, at 384 dimensions)


def vector_chunks(job: MiningJob, count: int, size: int = CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The job's first ``count`` sequences in index order as (indices (c,), float32 vectors (c, d)), ``size`` at a time, each
    chunk read whole by its own COPY, so the caller may use the connection between two (a cancel check)."""
    after, left = -1, count
    while left > 0:
        rows = list(stored_rows(job, after=after, limit=min(size, left), packed=True))
        if not rows:
            raise ValueError(f"mining job {job.pk} has {count - left} stored sequence vectors, not {count}; mine again to prepare them")
        yield np.array([row[0] for row in rows], dtype=np.int64), unit_rows(unpacked_halves([row[1] for row in rows]))
        after, left = rows[-1][0], left - len(rows)


def vectors_of(job: MiningJob, indices: np.ndarray) -> np.ndarray:
    """The stored vectors (len(indices), d), float32, of the job's sequences ``indices`` (sorted, unique), in that order."""
    table = MiningSequence._meta.db_table
    with vector_cursor() as cursor:
        cursor.execute(
            f"SELECT index, vector FROM {table} WHERE job_id = %s AND index = ANY(%s) ORDER BY index",
            [job.pk, [int(i) for i in indices]],
            binary=True,
        )
        rows = cursor.fetchall()
    if [row[0] for row in rows] != [int(i) for i in indices]:
        raise ValueError(f"mining job {job.pk}: some of the sequences asked for have no stored vector")
    return as_float32([row[1] for row in rows])


def as_float32(halves: list) -> np.ndarray:
    """pgvector ``HalfVector`` values as one float32 matrix (n, d) of unit rows (:func:`unit_rows`), as faiss and NumPy's
    products take them. Filled in place: no float16 stack or (n, d) temporaries beside the result (a chunk of 20,000
    is 30 MB)."""
    if not halves:
        return np.zeros((0, 0), np.float32)
    matrix = np.empty((len(halves), halves[0].dimensions()), dtype=np.float32)
    for row, half in enumerate(halves):
        matrix[row] = half.to_numpy()
    return unit_rows(matrix)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` (n, d) float32 with each row scaled to norm 1, in place: rounding a unit vector to half precision moves
    its norm by up to about 1e-4, and the searches' inner products are to be the cosines that pgvector's ``<=>``
    computes from the same halves."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    matrix /= np.maximum(norms, np.float32(1e-12))[:, None]
    return matrix
