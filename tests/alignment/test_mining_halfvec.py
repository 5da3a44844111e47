"""A MUSS job's sequence vectors are stored in half precision (pgvector's ``halfvec``): two bytes a dimension, each
float rounded once to the nearest half; the pgvector search's index is over the halves; a vector past half precision's
range is refused before anything is written; and migration 0022 moves an older job's float32 vectors, dropping its
old index and building it again only for a job that will still search."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from django.apps import apps
from django.db import connection

from alignment.copying import packed_half_rows, unpacked_halves, unpacked_sparse, vector_cursor
from alignment.mining import muss_service
from alignment.mining import service as mining
from alignment.mining.models import MiningJob, MiningSequence
from alignment.mining.search_backend import search_prepare
from alignment.mining.vectors import as_float32, stored_rows, vector_chunks
from tests.alignment.test_mining_bulk_writes import _job
from tests.alignment.test_muss_rows import encode

migration = importlib.import_module("alignment.migrations.0022_mining_sequence_halfvec")


def _column(job: MiningJob) -> tuple[str, set[int]]:
    """The column's type, and the bytes the job's vectors take on disk (a varlena header of 1 or 4, then pgvector's)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'alignment_miningsequence'::regclass AND attname = 'vector'"
        )
        kind = cursor.fetchone()[0]
        cursor.execute(
            "SELECT DISTINCT pg_column_size(vector) FROM alignment_miningsequence WHERE job_id = %s",
            [job.pk],
        )
        return kind, {size for (size,) in cursor.fetchall()}


def _index_definition(job: MiningJob) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [f"mining_sequence_hnsw_{job.pk}"])
        row = cursor.fetchone()
    return row[0] if row else None


def test_sequence_vectors_are_halves_at_two_bytes_a_dimension_and_the_search_index_is_over_them(owner, db, monkeypatch, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "pgvector"
    job = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))
    dimensions = len(rows[0].vector)
    assert _column(job) == ("halfvec", {1 + 4 + 2 * dimensions})  # header, dimensions and 2 bytes each (float32: 4 each)
    expected = encode([row.text for row in rows])
    halves = [row[1] for row in stored_rows(job)]
    assert np.array_equal(np.stack([half.to_numpy() for half in halves]), expected.astype(np.float16))
    widened = as_float32(halves)  # what the searches read: unit rows, the halves' cosines
    assert widened.dtype == np.float32 and np.allclose(np.linalg.norm(widened, axis=1), 1.0, atol=1e-6)
    assert np.allclose(widened, expected, atol=1e-3) and not np.array_equal(widened, expected)
    chunks = list(vector_chunks(job, len(rows), size=3))  # read packed, a chunk at a time: the same unit rows
    assert np.array_equal(np.concatenate([ids for ids, _ in chunks]), np.arange(len(rows)))
    assert np.array_equal(np.concatenate([vectors for _, vectors in chunks]), widened)
    definition = _index_definition(job)
    assert definition is not None and "halfvec_cosine_ops" in definition and f"halfvec({dimensions})" in definition


@pytest.mark.parametrize(
    ("value", "why"), [(70000.0, "past half precision's range"), (float("nan"), "not finite"), (float("inf"), "not finite")]
)
def test_a_vector_half_precision_cannot_hold_is_refused_and_nothing_is_stored(owner, db, monkeypatch, value, why) -> None:
    with pytest.raises(ValueError, match=why):
        packed_half_rows(np.array([[0.5, value]], dtype=np.float32))
    job = _job(owner, monkeypatch)

    def broken(texts: list[str]) -> np.ndarray:
        vectors = encode(texts)
        vectors[0, 0] = value
        return vectors

    mining.mining_job_prepare(job_id=job.pk, encode=broken)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.FAILED and why in job.error
    assert not MiningSequence.objects.filter(job=job).exists()


def test_the_migration_keeps_an_older_jobs_vectors_and_builds_its_index_again_only_while_it_is_unfinished(
    owner, db, monkeypatch, settings
) -> None:
    settings.MINING_SEARCH_BACKEND = "pgvector"
    running = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=running.pk, encode=encode)
    finished = MiningJob.objects.create(
        source_corpus=running.source_corpus,
        target_corpus=running.target_corpus,
        method="muss",
        config=running.config,
        status=MiningJob.Status.SUCCEEDED,
    )
    copied = [
        MiningSequence(job=finished, index=row.index, document=row.document, start=row.start, end=row.end, text=row.text, vector=row.vector)
        for row in MiningSequence.objects.filter(job=running)
    ]
    MiningSequence.objects.bulk_create(copied)
    dimensions = len(copied[0].vector)
    original = encode([row.text for row in MiningSequence.objects.filter(job=running).order_by("index")])
    with connection.cursor() as cursor:  # the schema and indexes before 0022: float32 vectors, indexes over vector(d)
        for job in (running, finished):
            cursor.execute(f"DROP INDEX IF EXISTS mining_sequence_hnsw_{job.pk}")
        cursor.execute("ALTER TABLE alignment_miningsequence ALTER COLUMN vector TYPE vector USING vector::vector")
        for job in (running, finished):
            cursor.execute(
                f"CREATE INDEX mining_sequence_hnsw_{job.pk} ON alignment_miningsequence "
                f"USING hnsw ((vector::vector({dimensions})) vector_cosine_ops) WHERE job_id = {job.pk}"
            )
    with connection.schema_editor() as editor:  # 0022's three steps, on this database's rows
        migration.drop_old(apps, editor)
        editor.execute("ALTER TABLE alignment_miningsequence ALTER COLUMN vector TYPE halfvec USING vector::halfvec")
        migration.rebuild_unfinished(apps, editor)
    assert _column(running) == ("halfvec", {1 + 4 + 2 * dimensions})
    stored = as_float32([row[1] for row in stored_rows(running)])
    assert np.allclose(stored, original, atol=1e-3)  # every vector kept, rounded once
    assert "halfvec_cosine_ops" in (_index_definition(running) or "")  # the running job searches on
    assert _index_definition(finished) is None  # a finished one searches no more: nothing built for it
    search_prepare(running, len(original))  # what a resumed prepare runs: the index is there already
    assert muss_service.neighbours_batch(running, 0, len(original)) == len(original)


def test_halves_read_packed_are_the_stored_halves_widened_bit_for_bit(db) -> None:
    values = np.array([[0.1, -2.5, 3e-3], [65504.0, -0.0, 7.0]], dtype=np.float32)
    with vector_cursor(packed_halves=True) as cursor:
        cursor.execute("SELECT %s::halfvec, %s::halfvec", [str(values[0].tolist()), str(values[1].tolist())], binary=True)
        packed = list(cursor.fetchone())
        cursor.execute("SELECT '[1,2]'::halfvec", binary=True)
        shorter = cursor.fetchone()[0]
    assert all(isinstance(row, bytes) for row in packed)
    unpacked = unpacked_halves(packed)
    assert unpacked.dtype == np.float32 and np.array_equal(unpacked, values.astype(np.float16).astype(np.float32))
    assert unpacked_halves([]).shape == (0, 0)
    with pytest.raises(ValueError, match="expected halfvecs of 3 dimensions, got \\[2, 3\\]"):
        unpacked_halves([*packed, shorter])


def test_sparse_rows_read_packed_are_the_stored_rows_bit_for_bit(db) -> None:
    texts = ["{1:0.5,7:-2.25,9:3e-8}/10", "{}/10", "{10:1}/10"]  # one of no non-zero
    with vector_cursor(packed_sparse=True) as cursor:
        cursor.execute("SELECT " + ", ".join(["%s::sparsevec"] * len(texts)), texts, binary=True)
        packed = list(cursor.fetchone())
    with vector_cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(["%s::sparsevec"] * len(texts)), texts, binary=True)
        parsed = list(cursor.fetchone())
    unpacked = unpacked_sparse(packed, 10)
    assert unpacked.shape == (3, 10) and unpacked.dtype == np.float32
    assert np.array_equal(unpacked.toarray(), np.stack([row.to_numpy() for row in parsed]))
    assert unpacked_sparse([], 10).shape == (0, 10)
    with pytest.raises(ValueError, match="expected sparsevecs of 11 dimensions"):
        unpacked_sparse(packed, 11)
    with pytest.raises(ValueError, match="expected sparsevecs of 10 dimensions"):
        unpacked_sparse([packed[0][:-4]], 10)  # cut short
