"""An LHA job's shards and prepare work a batch of documents at a time (alignment/mining/lha_shard.py): the job finds
what the in-memory pipeline finds on the same vectors, a batch is bounded, its queries do not grow with its documents,
and only the current segmentation is read."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from alignment import services
from alignment.copying import unpacked_vectors, vector_cursor
from alignment.mining import document_vectors, lha_search, lha_shard
from alignment.mining import service as mining
from alignment.mining.lha_service import lha_config
from alignment.mining.models import DocumentEmbedding, MinedPair, MiningJob, MiningShard
from alignment.mining.worker_index import WorkerIndex
from alignment.models import Document, Encoder, Sentence
from alignment.segmenting.service import sentence_split
from models_ml.mining import vector_index
from models_ml.mining.lha import mine_lha
from models_ml.mining.types import MiningDocument
from tests.alignment.test_mining import embedded_news_corpora

SETTINGS = {"k_documents": 1, "theta_d": 0.3, "k_sentences": 1, "theta_s": 0.5}


def _mine(source, target, run_worker, config: dict = SETTINGS) -> MiningJob:
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=config, shard_documents=2)
    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    return job


def _stored(job: MiningJob) -> set[tuple]:
    rows = MinedPair.objects.filter(job=job).values_list("source_document_id", "source_sentences", "target_document_id", "target_sentences")
    return {(s, tuple(ss), t, tuple(ts)) for s, ss, t, ts in rows}


@pytest.mark.parametrize("backend", ["pgvector", "faiss"])
def test_the_job_finds_what_mine_lha_finds_on_the_same_vectors(owner, run_worker, monkeypatch, settings, backend, client) -> None:
    settings.MINING_SEARCH_BACKEND = backend  # faiss: the document step searches in the worker (alignment/mining/lha_search.py)
    source, target = embedded_news_corpora(owner, run_worker)
    monkeypatch.setattr(lha_shard, "BATCH_DOCUMENTS", 3)  # batches that end inside a shard and across its two
    job = _mine(source, target, run_worker)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    ids = {
        corpus.pk: list(Document.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True)) for corpus in (source, target)
    }
    sides = {corpus: lha_shard.document_sides(ids[corpus.pk], encoder) for corpus in (source, target)}
    stored = np.concatenate([sides[corpus][d][1] for corpus in (source, target) for d in ids[corpus.pk]])
    served = [0]

    def encode(texts: list[str]) -> np.ndarray:  # the stored vectors, in the order mine_lha asks for them (source, then target)
        rows = stored[served[0] : served[0] + len(texts)]
        served[0] += len(texts)
        return rows

    documents = {corpus: [MiningDocument(str(d), sides[corpus][d][0]) for d in ids[corpus.pk]] for corpus in (source, target)}
    expected = {
        (int(p.source_doc), tuple(p.source), int(p.target_doc), tuple(p.target))
        for p in mine_lha(documents[source], documents[target], encode=encode, config=lha_config(job.config))
    }
    assert served[0] == len(stored) and len(expected) >= 8
    assert _stored(job) == expected
    with connection.cursor() as cursor:  # faiss builds its index in the worker: none over the document vectors in PostgreSQL
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [f"document_embedding_hnsw_{encoder.pk}"])
        assert cursor.fetchone()[0] == (backend == "pgvector")
    job.refresh_from_db()
    targets = target.documents.count()
    assert job.search_index == {
        "kind": "documents", "documents": targets, "ef_search": settings.MINING_EF_SEARCH, "backend": backend,
        "index": "exact" if backend == "faiss" else "hnsw",
    }  # fmt: skip
    client.force_login(owner)
    html = client.get(reverse("alignment:mining_job", args=[job.pk])).content.decode()
    shown = "exact (faiss flat), in each worker" if backend == "faiss" else f"pgvector HNSW, ef_search {settings.MINING_EF_SEARCH}"
    assert f"Documents searched: {shown}, {targets} target documents" in html


def test_a_one_corpus_job_searched_in_the_worker_never_pairs_a_document_with_itself(owner, run_worker, settings) -> None:
    source, _ = embedded_news_corpora(owner, run_worker)
    found = {}
    for backend in ("pgvector", "faiss"):
        settings.MINING_SEARCH_BACKEND = backend
        loose = {"k_documents": 2, "theta_d": 0.0, "k_sentences": 1, "theta_s": 0.2, "min_overlap": None}  # pairs however unlike
        job = _mine(source, source, run_worker, loose)  # a corpus mined against itself
        found[backend] = _stored(job)
        MiningJob.objects.filter(pk=job.pk).delete()  # the next backend's job is a new one, not this finished one
    assert found["faiss"] == found["pgvector"] and found["faiss"]
    assert all(source_document != target_document for source_document, _, target_document, _ in found["faiss"])


def test_the_worker_builds_its_document_index_again_when_the_target_corpus_grows(owner, run_worker, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "faiss"
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS)
    mining.mining_job_prepare(job_id=job.pk)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    assert lha_search.searched_in_worker(job)
    index = lha_search.target_index(job, encoder)
    assert index.size == target.documents.count() and lha_search.target_index(job, encoder) is index  # kept
    added = DocumentEmbedding.objects.filter(document__corpus=source).first()
    moved = Document.objects.create(corpus=target, external_id="late", level="ele", raw_text="")
    DocumentEmbedding.objects.create(document=moved, encoder=encoder, vector=added.vector)
    rebuilt = lha_search.target_index(job, encoder)
    assert rebuilt is not index and rebuilt.size == index.size + 1
    neighbours = lha_search.faiss_document_neighbours(job, [added.document_id], encoder, k=1, theta_d=0.99)
    assert neighbours == {added.document_id: [(moved.pk, pytest.approx(1.0, abs=1e-5))]}
    settings.MINING_FAISS_MAX_SEQUENCES = target.documents.count() - 1  # past the worker's bound: pgvector searches
    assert not lha_search.searched_in_worker(job)


def test_a_batch_is_bounded_by_documents_and_sentences_but_holds_one_document_at_least(owner, run_worker, monkeypatch) -> None:
    source, _ = embedded_news_corpora(owner, run_worker)
    ids = list(Document.objects.filter(corpus=source).order_by("pk").values_list("pk", flat=True))  # 4 documents of 3 sentences
    assert lha_shard.document_batch(ids, 0, 4) == ids
    monkeypatch.setattr(lha_shard, "BATCH_DOCUMENTS", 3)
    assert lha_shard.document_batch(ids, 0, 4) == ids[:3] and lha_shard.document_batch(ids, 3, 4) == ids[3:]
    monkeypatch.setattr(lha_shard, "BATCH_SENTENCES", 7)
    assert lha_shard.document_batch(ids, 0, 4) == ids[:2]  # 6 sentences; a third document would make 9
    monkeypatch.setattr(lha_shard, "BATCH_SENTENCES", 1)
    assert lha_shard.document_batch(ids, 1, 4) == ids[1:2]  # one document, though it holds more
    assert lha_shard.document_batch(ids, 1, 2) == ids[1:2]  # never past ``end`` (the shard's)


def test_a_batch_costs_the_same_queries_for_one_document_and_for_four(owner, run_worker, django_assert_max_num_queries) -> None:
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=4)
    mining.mining_job_prepare(job_id=job.pk)
    encoder, config = Encoder.objects.get(name=settings.ENCODER_MODEL), lha_config(job.config)
    ids = list(Document.objects.filter(corpus=source).order_by("pk").values_list("pk", flat=True))
    with django_assert_max_num_queries(6):  # the neighbours (with its transaction's settings), the sentences
        one = lha_shard.mine_batch(job, ids[:1], config, encoder)
    with django_assert_max_num_queries(6):
        four = lha_shard.mine_batch(job, ids, config, encoder)
    assert one and len(four) > len(one)
    assert {(p.source_document_id, p.source_key, p.target_key) for p in one} <= {
        (p.source_document_id, p.source_key, p.target_key) for p in four
    }


def test_a_sentence_split_on_screen_is_mined_as_the_current_segmentation(owner, run_worker) -> None:
    """The retired sentence keeps its vector (labels name it); the ORM read took it beside the two new ones."""
    source, target = embedded_news_corpora(owner, run_worker)
    document = Document.objects.get(corpus=source, external_id__startswith="Tram")
    first = Sentence.objects.get(document=document, index=0)
    sentence_split(sentence_id=first.pk, offset=first.text.index(" on Tuesday"), by=owner)
    services.embedding_run_create(corpus=source, encoder_name=settings.ENCODER_MODEL)
    run_worker(["embedding"])
    texts = list(Sentence.objects.filter(document=document).order_by("index").values_list("text", flat=True))
    assert len(texts) == 4 and Sentence.all_objects.filter(document=document).count() == 5
    side = lha_shard.document_sides([document.pk], Encoder.objects.get(name=settings.ENCODER_MODEL))[document.pk]
    assert side[0] == texts and side[1].shape[0] == 4

    job = _mine(source, target, run_worker)
    pairs = list(MinedPair.objects.filter(job=job, source_document=document))
    assert pairs and all(p.source_text == " ".join(texts[i] for i in p.source_sentences) for p in pairs)


def test_document_vectors_stored_by_another_prepare_first_are_kept_and_the_rest_added(owner, run_worker, monkeypatch) -> None:
    source, _ = embedded_news_corpora(owner, run_worker)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    ids = list(Document.objects.filter(corpus=source).order_by("pk").values_list("pk", flat=True))
    first = np.eye(1, int(encoder.dimensions), dtype=np.float32)[0]
    DocumentEmbedding.objects.create(document_id=ids[1], encoder=encoder, vector=first)  # another job's prepare, a moment earlier
    monkeypatch.setattr(document_vectors, "DOCUMENT_VECTOR_BATCH", 2)  # batches of two, one of them holding the stored document
    assert document_vectors.document_vectors_ensure(corpus=source, encoder=encoder) == len(ids) - 1
    rows = dict(DocumentEmbedding.objects.filter(encoder=encoder).values_list("document_id", "vector"))
    assert sorted(rows) == ids and np.array_equal(np.asarray(rows[ids[1]]), first)
    assert document_vectors._document_vectors_store(source, encoder, 0) == (None, 0)  # nothing left
    DocumentEmbedding.objects.filter(document_id=ids[0]).delete()
    DocumentEmbedding.objects.create(document_id=ids[0], encoder=encoder, vector=-first)  # stored while this batch was chosen
    assert document_vectors.document_vectors_ensure(corpus=source, encoder=encoder) == 0
    assert np.array_equal(np.asarray(DocumentEmbedding.objects.get(document_id=ids[0], encoder=encoder).vector), -first)


def test_a_document_vector_is_the_unit_mean_of_its_current_sentences_vectors(owner, run_worker) -> None:
    source, _ = embedded_news_corpora(owner, run_worker)
    encoder = Encoder.objects.get(name=settings.ENCODER_MODEL)
    document = Document.objects.filter(corpus=source).order_by("pk").first()
    first = Sentence.objects.get(document=document, index=0)
    sentence_split(sentence_id=first.pk, offset=first.text.index(" ", 8), by=owner)  # two current sentences, one retired
    services.embedding_run_create(corpus=source, encoder_name=settings.ENCODER_MODEL)
    run_worker(["embedding"])
    empty = Document.objects.create(corpus=source, external_id="empty", level="adv", raw_text="")  # no sentence at all
    document_vectors.document_vectors_ensure(corpus=source, encoder=encoder, index=False)
    sentences = lha_shard.document_sides([document.pk], encoder)[document.pk][1]
    mean = sentences.mean(axis=0)
    stored = np.asarray(DocumentEmbedding.objects.get(document=document, encoder=encoder).vector)
    np.testing.assert_allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)
    assert not np.any(np.asarray(DocumentEmbedding.objects.get(document=empty, encoder=encoder).vector))


def test_vectors_read_packed_are_the_stored_vectors_bit_for_bit(db) -> None:
    values = np.array([[0.1, -2.5, 3e-8], [1e30, -0.0, 7.0]], dtype=np.float32)
    with vector_cursor(packed=True) as cursor:
        cursor.execute("SELECT %s::vector, %s::vector", [str(values[0].tolist()), str(values[1].tolist())], binary=True)
        packed = list(cursor.fetchone())
    assert all(isinstance(row, bytes) for row in packed)
    unpacked = unpacked_vectors(packed, 3)
    assert unpacked.dtype == np.float32 and np.array_equal(unpacked, values)
    assert unpacked_vectors([], 3).shape == (0, 3)
    with pytest.raises(ValueError, match="expected vectors of 4 dimensions, got \\[3\\]"):
        unpacked_vectors(packed, 4)


def test_a_shard_reads_ahead_and_stores_behind_on_its_helper_thread(owner, run_worker, monkeypatch) -> None:
    source, target = embedded_news_corpora(owner, run_worker)
    monkeypatch.setattr(lha_shard, "BATCH_DOCUMENTS", 1)  # four batches in one shard
    threads: dict[str, set[str]] = {"read": set(), "mine": set(), "store": set()}
    for step, name in (("read", "batch_read"), ("mine", "mine_batch"), ("store", "_store")):
        original = getattr(lha_shard, name)

        def recorded(*args, step=step, original=original, **kwargs):
            threads[step].add(threading.current_thread().name.split("_")[0])
            return original(*args, **kwargs)

        monkeypatch.setattr(lha_shard, name, recorded)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=4)
    started = time.perf_counter()
    run_worker(["mining"])
    wall = time.perf_counter() - started
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED and job.documents_done == 4 and job.pairs_found
    assert threads["read"] == threads["store"] == {"job-io"} and "job-io" not in threads["mine"]
    assert 0 < job.busy_seconds <= wall  # batches that overlapped are not counted twice


def test_shards_keep_their_first_and_last_document_and_read_their_ids_as_a_range(owner, run_worker) -> None:
    source, target = embedded_news_corpora(owner, run_worker)
    ids = list(Document.objects.filter(corpus=source).order_by("pk").values_list("pk", flat=True))  # 4 documents
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=3)
    assert mining._shard_ranges(job, 3) == [(0, 3, ids[0], ids[2]), (3, 4, ids[3], ids[3])]
    assert mining._shard_ranges(job, 4) == [(0, 4, ids[0], ids[3])] and mining._shard_ranges(job, 1)[3] == (3, 4, ids[3], ids[3])
    mining.mining_job_prepare(job_id=job.pk)
    first, second = MiningShard.objects.filter(job=job).order_by("index")
    assert (first.document_first, first.document_last, second.document_first, second.document_last) == (ids[0], ids[2], ids[3], ids[3])
    with CaptureQueriesContext(connection) as queries:
        assert mining._shard_document_ids(job, second) == ids[3:]
    assert "OFFSET" not in queries[-1]["sql"].upper()  # a range of ids, not a scan past the shards before it
    MiningShard.objects.filter(pk=second.pk).update(document_first=None, document_last=None)  # a shard made before the ids
    second.refresh_from_db()
    assert mining._shard_document_ids(job, second) == ids[3:]


def test_a_source_document_deleted_after_the_prepare_leaves_the_shard_to_finish(owner, run_worker) -> None:
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=4)
    mining.mining_job_prepare(job_id=job.pk)
    last = Document.objects.filter(corpus=source).order_by("pk").last()
    last.delete()  # the shard was cut for four documents; three are left
    worker = threading.Thread(target=run_worker, args=(["mining"],), daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the shard never finished: it kept looking for its fourth document"
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert job.pairs_found and not MinedPair.objects.filter(job=job, source_document_id=last.pk).exists()


def test_a_cancel_while_the_worker_builds_its_document_index_stops_the_build_and_cancels_the_job(owner, run_worker, settings, monkeypatch):
    settings.MINING_SEARCH_BACKEND = "faiss"
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=4)
    mining.mining_job_prepare(job_id=job.pk)
    monkeypatch.setattr(vector_index, "ADD_CHUNK", 1)  # a check between every two vectors of the build
    monkeypatch.setattr(lha_search, "_documents_index", WorkerIndex())
    chunks = []

    class CancelledWhileBuilt(vector_index.FaissIndex):
        @classmethod
        def from_chunks(cls, chunks_, total, *, between_chunks=None, **options):
            def counted() -> None:
                chunks.append(1)
                mining.mining_job_cancel(job=job)  # the user presses Cancel while the build runs
                between_chunks()

            return super().from_chunks(chunks_, total, between_chunks=counted, **options)

    monkeypatch.setattr(lha_search, "FaissIndex", CancelledWhileBuilt)
    shard = MiningShard.objects.get(job=job)
    mining.mining_shard_execute(shard_id=shard.pk)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and chunks == [1]  # stopped at the first check, not failed
    assert not MinedPair.objects.filter(job=job).exists() and lha_search._documents_index.held() is None
