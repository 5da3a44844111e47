"""MUSS with the optional faiss search backend: the same neighbours and pairs as pgvector; a clear error without faiss."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import search_backend
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningSequence
from alignment.services import corpus_get_or_create
from tests.alignment.test_mining import PARAPHRASES


def _import_paraphrases(corpus) -> None:
    if not corpus.documents.exists():
        files = [(f"{title}-adv.txt", text.encode()) for title, text in PARAPHRASES.items()]
        assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors


def _muss_job(owner, run_worker, settings, backend: str, shard_sequences: int) -> MiningJob:
    settings.MINING_SEARCH_BACKEND = backend
    corpus, _ = corpus_get_or_create(name="Paraphrases", language="en", owner=owner)
    _import_paraphrases(corpus)
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4}, shard_sequences=shard_sequences)
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    return job


def test_faiss_backend_finds_the_same_neighbours_and_pairs_as_pgvector(owner, run_worker, settings) -> None:
    by_pgvector = _muss_job(owner, run_worker, settings, "pgvector", shard_sequences=4)
    by_faiss = _muss_job(owner, run_worker, settings, "faiss", shard_sequences=3)  # another job: shards differ
    assert by_faiss.pk != by_pgvector.pk
    expected = {row.index: row.neighbours for row in MiningSequence.objects.filter(job=by_pgvector)}
    found = {row.index: row.neighbours for row in MiningSequence.objects.filter(job=by_faiss)}
    assert len(found) == len(expected) > 4
    for index, neighbours in expected.items():
        assert [i for i, _ in found[index]] == [i for i, _ in neighbours], index
        assert [c for _, c in found[index]] == pytest.approx([c for _, c in neighbours], abs=1e-5)
        assert index not in [i for i, _ in found[index]]

    def pairs(job):
        return {(p.source_text, p.target_text) for p in MinedPair.objects.filter(job=job)}

    assert pairs(by_faiss) == pairs(by_pgvector) and pairs(by_faiss)
    with connection.cursor() as cursor:  # faiss searched in memory: no HNSW index was built in PostgreSQL for its job
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'mining_sequence_hnsw_%%'")
        built = {name for (name,) in cursor.fetchall()}
    assert f"mining_sequence_hnsw_{by_pgvector.pk}" in built and f"mining_sequence_hnsw_{by_faiss.pk}" not in built


def test_a_job_larger_than_the_faiss_limit_is_searched_by_the_ivf_index_not_held_in_memory(owner, run_worker, settings) -> None:
    settings.MINING_FAISS_MAX_SEQUENCES = 3
    settings.MINING_IVF_CELLS = 1
    job = _muss_job(owner, run_worker, settings, "faiss", shard_sequences=3)
    assert MiningSequence.objects.filter(job=job).count() > 3
    assert not MiningSequence.objects.filter(job=job, neighbour_row__isnull=True).exists()
    job.refresh_from_db()
    assert job.search_index["kind"] == "ivf" and job.search_index["cells"] == 1
    with connection.cursor() as cursor:  # no HNSW index in PostgreSQL either
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [f"mining_sequence_hnsw_{job.pk}"])
        assert cursor.fetchone() is None


def test_a_worker_builds_a_jobs_index_once_and_replaces_it_for_the_next_job(owner, run_worker, settings) -> None:
    job = _muss_job(owner, run_worker, settings, "faiss", shard_sequences=3)
    first = search_backend.job_index(job)
    assert search_backend.job_index(job) is first and first.size == MiningSequence.objects.filter(job=job).count()
    MiningSequence.objects.filter(job=job, index=0).delete()  # the stored vectors changed: rebuilt from PostgreSQL
    rebuilt = search_backend.job_index(job)
    assert rebuilt is not first and rebuilt.size == first.size - 1


def test_faiss_backend_without_faiss_installed_fails_the_system_check(settings, monkeypatch) -> None:
    settings.MINING_SEARCH_BACKEND = "faiss"
    call_command("check", "alignment")  # installed: passes
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(SystemCheckError, match=r"(?s)alignment.E001.*faiss-cpu is not installed.*pip install faiss-cpu"):
        call_command("check", "alignment")
    settings.MINING_SEARCH_BACKEND = "pgvector"
    call_command("check", "alignment")


def settings_refusal(name: str, value: str) -> str:
    """The settings loaded in a new process with ``name=value``: the error they stop with (it fails if they load)."""
    env = {**os.environ, name: value, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    return result.stderr


def test_an_unknown_search_backend_stops_the_settings_with_the_choices() -> None:
    assert "MINING_SEARCH_BACKEND='annoy': choose pgvector or faiss" in settings_refusal("MINING_SEARCH_BACKEND", "annoy")
