"""A MUSS job's faiss index, built once by the prepare and kept in PostgreSQL for every worker.

Why: a worker that builds the job's index for itself spends about half its neighbours phase on the build, and with N
workers on N hosts the build runs N times (``bench/mining_scale.py --workers``: 1.44x on two workers, not 1.7x).
PostgreSQL is all the workers share, so the prepare builds the index once (with every thread its host has), writes it
in faiss's own format in parts of at most :data:`PART_BYTES` (:class:`MiningIndexPart`), and records it on the job
(``search_index``: kind ``hnsw``, the sequences it holds). A worker reads the parts back through a temporary file in
place of building: its memory is the index plus one part. A prepare run again (resumed after a crash) finds the index
stored for the same sequences and builds nothing. The parts go when the job succeeds.

The exact index below :data:`models_ml.mining.vector_index.SELF_SEARCH_EXACT_BELOW` sequences is not stored: it is the
vectors, which each worker reads and adds to a flat index about as fast as it read the stored one back
(``alignment.mining.search_backend._faiss_prepare``); jobs prepared before that still read theirs. The IVF index past ``MINING_FAISS_MAX_SEQUENCES``
is stored too (``alignment.mining.ivf_search``): a k-means on a sample and a pass of adds over every vector, which
each worker repeated before.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np
from django.db import transaction

from alignment.copying import copy_binary, vector_cursor
from alignment.mining.models import MiningIndexPart, MiningJob, MiningSequence
from models_ml.mining.ivf_index import IvfIndex, IvfSettings
from models_ml.mining.vector_index import HNSW_M, FaissIndex

PART_BYTES = 32 * 2**20  # one row of MiningIndexPart: bounds what a write or a read holds besides the index


STORED_KINDS = ("hnsw", "exact", "ivf")  # the ``search_index`` kinds this module writes


class Writable(Protocol):
    def write(self, path: str) -> None: ...


def faiss_kind(index: FaissIndex) -> dict:
    """What the job records of a :class:`FaissIndex` (shown on its page)."""
    return {"kind": "exact"} if index.exact else {"kind": "hnsw", "m": HNSW_M}


def _description(job: MiningJob) -> dict:
    """The job's ``search_index`` as stored now (read fresh: another process may have written it)."""
    return MiningJob.objects.filter(pk=job.pk).values_list("search_index", flat=True).first() or {}


def _stored_parts(job: MiningJob, count: int, kinds: tuple[str, ...] = STORED_KINDS) -> int:
    """How many parts hold the job's index (one of ``kinds``) over its first ``count`` sequences; 0 where none is."""
    described = _description(job)
    return int(described.get("parts", 0)) if described.get("kind") in kinds and described.get("sequences") == count else 0


def index_stored(job: MiningJob, count: int) -> bool:
    """Whether the job's index over its first ``count`` sequences is stored."""
    return _stored_parts(job, count) > 0


def index_store(job: MiningJob, index: Writable, count: int, kind: dict) -> None:
    """Write ``index`` (over the job's first ``count`` sequences; ``kind``: what the job records of it, its ``kind``
    one of :data:`STORED_KINDS`) as the job's stored index, replacing any other, in one transaction: a crash leaves the
    old parts or the new ones, never half of them."""
    with tempfile.TemporaryDirectory(prefix="mining-index-") as folder:
        path = Path(folder) / "index.faiss"
        index.write(str(path))
        size = path.stat().st_size
        with transaction.atomic(), path.open("rb") as file:
            MiningIndexPart.objects.filter(job=job).delete()
            chunks = iter(lambda: file.read(PART_BYTES), b"")  # one part in memory at a time
            part = copy_binary(MiningIndexPart, ("job_id", "part", "data"), ("int8", "int4", "bytea"), (
                (job.pk, number, chunk) for number, chunk in enumerate(chunks)
            ))  # fmt: skip
            described = {**kind, "sequences": count, "parts": part, "megabytes": round(size / 2**20, 1)}
            MiningJob.objects.filter(pk=job.pk).update(search_index=described)


def index_load(job: MiningJob, count: int, *, ef_search: int, threads: int) -> FaissIndex | None:
    """The job's stored faiss index (HNSW or exact) over its first ``count`` sequences, or None where none is stored."""
    with _stored_file(job, count, ("hnsw", "exact")) as path:
        if path is None:
            return None
        indices = MiningSequence.objects.filter(job=job).order_by("index").values_list("index", flat=True)[:count]
        ids = np.fromiter(indices.iterator(chunk_size=100_000), dtype=np.int64, count=count)
        return FaissIndex.read(str(path), ids, ef_search=ef_search, threads=threads)


def ivf_load(job: MiningJob, count: int, *, threads: int) -> IvfIndex | None:
    """The job's stored IVF index over its first ``count`` sequences (its ids inside), or None where none is stored."""
    with _stored_file(job, count, ("ivf",)) as path:
        if path is None:
            return None
        described = _description(job)
        settings = IvfSettings(**{name: described[name] for name in IvfSettings.__dataclass_fields__})
        return IvfIndex.read(str(path), settings, threads=threads)


@contextmanager
def _stored_file(job: MiningJob, count: int, kinds: tuple[str, ...]) -> Iterator[Path | None]:
    """The stored index's parts joined in a temporary file, or None where none of ``kinds`` is stored for ``count``
    sequences (or its parts went meanwhile: the job succeeded); one part in memory at a time."""
    parts = _stored_parts(job, count, kinds)
    table = MiningIndexPart._meta.db_table
    with tempfile.TemporaryDirectory(prefix="mining-index-") as folder:
        path = Path(folder) / "index.faiss"
        with path.open("wb") as file, vector_cursor() as cursor:
            for part in range(parts):  # as bytes (binary: not hex text)
                cursor.execute(f"SELECT data FROM {table} WHERE job_id = %s AND part = %s", [job.pk, part], binary=True)
                row = cursor.fetchone()
                if row is None:
                    parts = 0  # deleted meanwhile: the caller builds
                    break
                file.write(row[0])
        yield path if parts else None


def index_forget(job: MiningJob) -> None:
    """Drop the job's stored index (it succeeded: no shard will read it again); the job keeps its description."""
    with transaction.atomic():
        MiningIndexPart.objects.filter(job=job).delete()
        described = _description(job)
        if described.get("kind") in STORED_KINDS:
            MiningJob.objects.filter(pk=job.pk).update(search_index={**described, "parts": 0})
