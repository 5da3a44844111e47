"""A MUSS job's faiss index is built once by the prepare and kept in PostgreSQL: the workers read it, none builds it."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.urls import reverse

from alignment.mining import ivf_search, search_backend
from alignment.mining import service as mining
from alignment.mining.models import MiningIndexPart, MiningJob, MiningSequence
from alignment.mining.worker_index import WorkerIndex
from alignment.services import corpus_get_or_create
from models_ml.mining.vector_index import FaissIndex
from tests.alignment.test_mining_search import _import_paraphrases


@pytest.fixture
def prepared(owner, run_worker, settings) -> MiningJob:
    return _prepared(owner, run_worker, settings)


def _prepared(owner, run_worker, settings) -> MiningJob:
    """A MUSS job whose prepare ran (on its own queue, as on another host) and whose shards wait on ``mining``."""
    settings.MINING_SEARCH_BACKEND = "faiss"
    settings.MINING_PREPARE_QUEUE = "embedding"
    corpus, _ = corpus_get_or_create(name="Paraphrases", language="en", owner=owner)
    _import_paraphrases(corpus)
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4}, shard_sequences=3)
    run_worker(["embedding"])
    job.refresh_from_db()
    return job


@pytest.fixture
def builds(monkeypatch) -> list[int]:
    """Each faiss index the search backend builds from vectors, by its size; and no index cached (a fresh worker)."""
    built: list[int] = []

    class Counted(FaissIndex):
        def _start(self, dimensions, total, *args) -> None:  # every build, from vectors or from chunks
            built.append(total)
            super()._start(dimensions, total, *args)

    monkeypatch.setattr(search_backend, "FaissIndex", Counted)
    monkeypatch.setattr(search_backend, "_job_index", WorkerIndex())
    return built


def _part_versions(job: MiningJob) -> list[tuple[int, str]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT part, xmin::text FROM {MiningIndexPart._meta.db_table} WHERE job_id = %s ORDER BY part", [job.pk])
        return cursor.fetchall()


def _exact_neighbours(job: MiningJob) -> None:
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))
    vectors = np.stack([np.asarray(row.vector, dtype=np.float32) for row in rows])
    cosines = vectors @ vectors.T
    np.fill_diagonal(cosines, -np.inf)
    for row in rows:  # the neighbours are the exact search's over the vectors PostgreSQL keeps
        assert [index for index, _ in row.neighbours] == np.argsort(-cosines[row.index], kind="stable")[:4].tolist()


def test_the_prepare_stores_an_hnsw_index_once_and_the_workers_read_it_instead_of_building(
    owner, run_worker, settings, monkeypatch, builds, client
) -> None:
    monkeypatch.setattr(search_backend, "SELF_SEARCH_EXACT_BELOW", 3)  # HNSW from 3 sequences
    job = _prepared(owner, run_worker, settings)
    count = MiningSequence.objects.filter(job=job).count()
    assert job.status == MiningJob.Status.RUNNING and count > 4 and builds == [count]  # built once, by the prepare
    assert job.search_index["kind"] == "hnsw" and job.search_index["sequences"] == count and job.search_index["parts"] == 1
    stored = _part_versions(job)
    assert [part for part, _ in stored] == [0]
    search_backend.search_prepare(job, count)  # the prepare again (a resumed job): nothing rebuilt, nothing rewritten
    assert _part_versions(job) == stored and builds == [count]

    monkeypatch.setattr(search_backend, "_job_index", WorkerIndex())
    run_worker(["mining"])  # a worker that never saw the prepare
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert builds == [count]  # it read the stored index
    _exact_neighbours(job)  # a handful of vectors: HNSW finds the exact neighbours
    assert not MiningIndexPart.objects.filter(job=job).exists()  # succeeded: the parts are gone, the description stays
    assert job.search_index["kind"] == "hnsw" and job.search_index["parts"] == 0
    client.force_login(job.source_corpus.owner)
    html = client.get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    assert f"Index: faiss HNSW, M 16, {count} sequences" in html and "stored for the workers" not in html


def test_an_exact_index_is_not_stored_each_worker_builds_it_from_the_vectors(prepared, builds, run_worker, client) -> None:
    """An exact index is the vectors: the prepare records it, stores and builds nothing (building and storing it held
    every shard up); a worker adds the stored vectors to its own."""
    job = prepared
    count = MiningSequence.objects.filter(job=job).count()
    assert job.status == MiningJob.Status.RUNNING and count > 4
    dimensions = len(MiningSequence.objects.filter(job=job).first().vector)
    megabytes = round(count * dimensions * 4 / 2**20, 1)  # what each worker holds
    assert job.search_index == {"kind": "exact", "sequences": count, "parts": 0, "megabytes": megabytes}
    assert not MiningIndexPart.objects.filter(job=job).exists()
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert builds == [count]  # the worker's one build
    _exact_neighbours(job)
    client.force_login(job.source_corpus.owner)
    html = client.get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    assert f"Index: exact (faiss flat), {count} sequences" in html and "stored for the workers" not in html


def test_a_job_index_is_exact_up_to_the_self_search_limit_then_hnsw(owner, run_worker, settings, monkeypatch) -> None:
    """Every sequence is a query: the job's index stays exact up to SELF_SEARCH_EXACT_BELOW (50,000), not the 20,000
    after which a search of a few queries (an LHA batch's documents) goes to HNSW."""
    monkeypatch.setattr(search_backend, "SELF_SEARCH_EXACT_BELOW", 3)
    job = _prepared(owner, run_worker, settings)
    count = MiningSequence.objects.filter(job=job).count()
    assert count >= 3 and job.search_index["kind"] == "hnsw" and job.search_index["sequences"] == count
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error


def test_a_stored_index_that_lost_its_parts_is_built_again_not_trusted(owner, run_worker, settings, monkeypatch, builds) -> None:
    monkeypatch.setattr(search_backend, "SELF_SEARCH_EXACT_BELOW", 3)
    job = _prepared(owner, run_worker, settings)
    builds.clear()
    monkeypatch.setattr(search_backend, "_job_index", WorkerIndex())
    count = MiningSequence.objects.filter(job=job).count()
    MiningIndexPart.objects.filter(job=job).delete()
    index = search_backend.job_index(job)
    assert builds == [count] and index.size == count


def test_an_hnsw_index_written_and_read_back_searches_as_built_and_refuses_other_ids(tmp_path) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.arange(300) * 2 + 7
    built = FaissIndex(vectors, ids, exact_below=1, ef_search=50)
    assert not built.exact
    built.write(str(tmp_path / "index.faiss"))
    read = FaissIndex.read(str(tmp_path / "index.faiss"), ids, ef_search=50)
    assert not read.exact and read.size == 300
    expected, found = built.search_ids(ids[:50], 5), read.search_ids(ids[:50], 5)
    assert found.indices.tolist() == expected.indices.tolist() and np.array_equal(found.scores, expected.scores)
    with pytest.raises(ValueError, match="holds 300 vectors; need as many unique increasing ids, got 299"):
        FaissIndex.read(str(tmp_path / "index.faiss"), ids[:299])


def test_past_the_faiss_limit_the_prepare_stores_the_ivf_index_and_no_worker_trains_one(owner, run_worker, settings, monkeypatch) -> None:
    settings.MINING_FAISS_MAX_SEQUENCES, settings.MINING_IVF_CELLS, settings.MINING_IVF_NPROBE = 3, 2, 2  # every cell probed
    trained: list[int] = []

    class Counted(ivf_search.IvfIndex):
        def __init__(self, sample, total, **settings_) -> None:
            trained.append(total)
            super().__init__(sample, total, **settings_)

    monkeypatch.setattr(ivf_search, "IvfIndex", Counted)
    job = _prepared(owner, run_worker, settings)
    count = MiningSequence.objects.filter(job=job).count()
    assert trained == [count] and job.search_index["kind"] == "ivf" and job.search_index["parts"] == 1
    assert job.search_index["sequences"] == count and job.search_index["cells"] == 2
    stored = _part_versions(job)
    search_backend.search_prepare(job, count)  # a resumed prepare: nothing trained, nothing rewritten
    assert trained == [count] and _part_versions(job) == stored

    ivf_search._ivf_index.release(job.pk)  # a worker that never saw the prepare
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert trained == [count]  # the workers read the stored index
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))
    vectors = np.stack([np.asarray(row.vector, dtype=np.float32) for row in rows])
    cosines = vectors @ vectors.T
    np.fill_diagonal(cosines, -np.inf)
    for row in rows:  # every cell probed: the exact search's neighbours
        assert [index for index, _ in row.neighbours] == np.argsort(-cosines[row.index], kind="stable")[:4].tolist()
    assert not MiningIndexPart.objects.filter(job=job).exists() and job.search_index["parts"] == 0
