"""Bulk rows through PostgreSQL's COPY, and vectors in pgvector's binary format: for the reads and writes whose rows are many.

Django's ``bulk_create`` builds one INSERT with a placeholder per value; for thousands of rows the
statement building costs as much as the database's work (a profile of an import: 7 s of 13.5 s in
``bulk_create``, half of it in the compiler). COPY streams the rows instead. It writes every column
named, so a model's Python-side defaults must be given here; ids come from the table's sequence and
are not returned (use ``bulk_create`` where the caller needs them).

Vectors: the ORM reads and writes a vector as text ("[0.1,0.2,...]"), parsing or formatting 384 floats
in Python per row; :func:`vector_cursor` moves them as binary instead (reading a pair's vectors: 1.0 of
2.0 s per 100 pairs went to parsing the text).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np
import psycopg
from django.db import connection, models
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.sparsevec import register_sparsevec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from scipy.sparse import csr_matrix

# pgvector's vector, halfvec and sparsevec types, by database: fetched once per process
_VECTOR_TYPES: dict[tuple, tuple[TypeInfo, TypeInfo, TypeInfo]] = {}


def json_int_list(numbers: Iterable[int]) -> str:
    """A list of ints as JSON text, for a jsonb column of a COPY: joined, rather than through ``json.dumps`` and
    psycopg's ``Jsonb`` dumper, on the job threads whose Python holds the GIL others need."""
    return "[" + ",".join(map(str, numbers)) + "]"


def table_name(model: type[models.Model]) -> str:
    """``model``'s table, quoted for SQL written by hand."""
    return connection.ops.quote_name(model._meta.db_table)


def copy_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """COPY ``rows`` (values in ``columns``' order, column names as in the table) into ``model``'s table; the count."""
    table = table_name(model)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    count = 0
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


class _PackedVectorLoader(Loader):
    format = Format.BINARY

    def load(self, data) -> bytes:
        return bytes(data)


def vector_cursor(*, packed: bool = False, packed_halves: bool = False, packed_sparse: bool = False) -> psycopg.Cursor:
    """A psycopg cursor on Django's connection (inside the caller's transaction) that sends (``%b``) and reads
    (``binary=True``) pgvector's binary format; a vector comes back as pgvector's ``Vector``, a halfvec as its ``HalfVector``
    (``to_numpy()``: float32, float16). ``packed``: a vector comes back as its binary bytes, for :func:`unpacked_vectors`
    to make one matrix of many (``Vector(...).to_numpy()`` a row was 0.4 s of 60,000 rows' 1.0 s read); ``packed_halves``:
    a halfvec likewise, for :func:`unpacked_halves`; ``packed_sparse``: a sparsevec, for :func:`unpacked_sparse`."""
    connection.ensure_connection()
    raw = connection.connection
    key = (raw.info.host, raw.info.port, raw.info.dbname)
    if key not in _VECTOR_TYPES:
        _VECTOR_TYPES[key] = (TypeInfo.fetch(raw, "vector"), TypeInfo.fetch(raw, "halfvec"), TypeInfo.fetch(raw, "sparsevec"))
    cursor = psycopg.Cursor(raw)  # server-side binding: Django's client-side cursor cannot send %b
    vector, half, sparse = _VECTOR_TYPES[key]
    register_vector_info(cursor, vector)
    register_halfvec_info(cursor, half)
    register_sparsevec_info(cursor, sparse)
    if packed:
        cursor.adapters.register_loader(vector.oid, _PackedVectorLoader)
    if packed_halves:
        cursor.adapters.register_loader(half.oid, _PackedVectorLoader)
    if packed_sparse:
        cursor.adapters.register_loader(sparse.oid, _PackedVectorLoader)
    return cursor


def unpacked_vectors(packed: Sequence[bytes], dimensions: int) -> np.ndarray:
    """The float32 matrix (n, d) of vectors read packed (:func:`vector_cursor`): each is uint16 d, uint16 0, then d
    big-endian float32, so n of them joined are an (n, d + 1) big-endian float32 matrix whose first column is the headers."""
    size = 4 + 4 * int(dimensions)
    if any(len(row) != size for row in packed):
        raise ValueError(f"expected vectors of {dimensions} dimensions, got {sorted({packed_dimensions(row) for row in packed})}")
    if not packed:
        return np.zeros((0, int(dimensions)), dtype=np.float32)
    return np.frombuffer(b"".join(packed), dtype=">f4").reshape(len(packed), int(dimensions) + 1)[:, 1:].astype(np.float32)


def unpacked_halves(packed: Sequence[bytes]) -> np.ndarray:
    """The float32 matrix (n, d) of halfvecs read packed (:func:`vector_cursor`): each is uint16 d, uint16 0, then d
    big-endian float16, so n of them joined are an (n, d + 2) big-endian float16 matrix whose first two columns are the
    headers (``HalfVector(...).to_numpy()`` a row was about half of reading 40,000 of a MUSS job's vectors)."""
    if not packed:
        return np.zeros((0, 0), dtype=np.float32)
    size = len(packed[0])
    if any(len(row) != size for row in packed):
        raise ValueError(f"expected halfvecs of {(size - 4) // 2} dimensions, got {sorted({(len(row) - 4) // 2 for row in packed})}")
    return np.frombuffer(b"".join(packed), dtype=">f2").reshape(len(packed), size // 2)[:, 2:].astype(np.float32)


def unpacked_sparse(packed: Sequence[bytes], dimensions: int) -> csr_matrix:
    """The CSR matrix (n, dimensions) of sparsevecs read packed (:func:`vector_cursor`), each int32 D, non-zeros, 0,
    then its columns (int32) and values (float32), big-endian: one gather over them joined, not a SparseVector a row."""
    lengths = np.fromiter((len(row) for row in packed), dtype=np.int64, count=len(packed))  # (n,) bytes
    words = np.frombuffer(b"".join(packed), dtype=">i4")  # each row a whole number of 4-byte words
    starts = np.cumsum(lengths // 4) - lengths // 4  # (n,) each row's first word
    if np.any(lengths < 12) or np.any(words[starts] != dimensions) or np.any(lengths != 12 + 8 * words[starts + 1]):
        raise ValueError(f"expected sparsevecs of {int(dimensions)} dimensions, each its header and 8 bytes a non-zero")
    counts = words[starts + 1].astype(np.int64)  # (n,) non-zeros
    indptr = np.concatenate([[0], np.cumsum(counts)])
    within = np.arange(indptr[-1]) - np.repeat(indptr[:-1], counts)  # each non-zero's place in its row
    columns = words[np.repeat(starts + 3, counts) + within].astype(np.int32)
    values = words.view(">f4")[np.repeat(starts + 3 + counts, counts) + within].astype(np.float32)
    return csr_matrix((values, columns, indptr), shape=(len(packed), int(dimensions)))


def packed_dimensions(row: bytes) -> int:
    """The dimensions of one vector read packed (:func:`vector_cursor`): its bytes less the 4-byte header, over 4."""
    return (len(row) - 4) // 4


def copy_binary(model: type[models.Model], columns: Sequence[str], types: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """COPY ``rows`` in PostgreSQL's binary format (``types``: each column's type name, e.g. ``int8``, ``vector``): no
    value is formatted as text, so a 384-float vector costs a memcpy, not 384 float formattings. The count."""
    table = table_name(model)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    count = 0
    with vector_cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


class PackedRow:
    """One row of a matrix already in pgvector's binary format (``halfvec``, ``sparsevec``), for :func:`copy_binary`,
    whose pgvector dumpers call ``to_binary``. Packed from the matrix's arrays at once: ``SparseVector(matrix[row])``
    sliced the matrix row by row, 11 of a 30,000-sequence hybrid prepare's 40 s."""

    __slots__ = ("_binary",)

    def __init__(self, binary: bytes) -> None:
        self._binary = binary

    def to_binary(self) -> bytes:
        return self._binary


def packed_sparse_rows(matrix) -> list[PackedRow]:
    """Each row of a scipy sparse matrix (n, D) packed as a sparsevec of D dimensions: int32 D, non-zeros, 0, then the
    0-based columns (int32) and values (float32), big-endian; explicit zeros dropped (a sparsevec holds none)."""
    matrix = matrix.tocsr(copy=True)
    matrix.eliminate_zeros()
    matrix.sort_indices()
    columns, values, bounds = matrix.indices.astype(">i4"), matrix.data.astype(">f4"), matrix.indptr.tolist()
    dimensions = int(matrix.shape[1])
    return [
        PackedRow(struct.pack(">iii", dimensions, stop - start, 0) + columns[start:stop].tobytes() + values[start:stop].tobytes())
        for start, stop in zip(bounds[:-1], bounds[1:])
    ]


def packed_half_rows(vectors) -> list[PackedRow]:
    """Each row of a dense matrix (n, d) packed as a ``halfvec``: uint16 d, 0, then d float16 values, big-endian, rounded
    to the nearest half (as ``::halfvec`` rounds); a value past float16's range is refused, as PostgreSQL refuses it."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a matrix of vectors (n, d), got shape {matrix.shape}")
    if not np.isfinite(matrix).all() or (np.abs(matrix) > np.finfo(np.float16).max).any():
        raise ValueError("a vector holds a value that is not finite or past half precision's range (65,504)")
    header = struct.pack(">HH", matrix.shape[1], 0)
    return [PackedRow(header + row.tobytes()) for row in matrix.astype(">f2")]
