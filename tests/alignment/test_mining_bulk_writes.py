"""A MUSS job's bulk writes (binary COPY of sequences, neighbours and mined pairs) are idempotent: a prepare stopped
halfway and run again stores each sequence once with the same vector, the neighbours go to a narrow table of their own
(the sequence rows are not rewritten) and a second copy of a batch replaces them, a pairs batch stored twice keeps one
row per pair, and the job finds what ``mine_muss`` finds on the same documents."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import muss_service, pair_store
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningNeighbours, MiningSequence, MiningShard
from alignment.models import Document, Sentence
from alignment.services import corpus_get_or_create
from models_ml.mining.knn import top_k
from models_ml.mining.muss import candidate_sequences, mine_muss
from models_ml.mining.types import MiningDocument
from tests.alignment.test_muss_rows import TEXTS, encode


def _job(owner, monkeypatch) -> MiningJob:
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # shards run below, in this process
    monkeypatch.setattr(muss_service, "BATCH", 1)  # a commit per encode_batch (2) sequences
    corpus, _ = corpus_get_or_create(name="Bulk", language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in TEXTS.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    return mining.mining_job_create(
        source_corpus=corpus, method="muss", config={"k": 3, "encode_batch": 2, "min_margin": 0.5, "max_distance": 1.5}
    )[0]


def _run_shards(job: MiningJob) -> None:
    while shard := MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("phase", "index").first():
        mining.mining_shard_execute(shard_id=shard.pk)


def test_a_prepare_stopped_halfway_stores_each_sequence_once_when_run_again(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)
    calls = []

    def failing(texts):
        calls.append(len(texts))
        if len(calls) == 3:
            raise RuntimeError("the worker died")
        return encode(texts)

    with pytest.raises(RuntimeError, match="the worker died"):
        mining.mining_job_prepare(job_id=job.pk, encode=failing)
    stored = MiningSequence.objects.filter(job=job).count()
    assert stored == 4  # two batches of two were committed before the third failed
    job.refresh_from_db()
    job.mark_queued()  # the retry (a failed job is resumed)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))
    assert [row.index for row in rows] == list(range(len(rows))) and len(rows) > stored
    expected = encode([row.text for row in rows])
    stored = np.array([row.vector for row in rows], dtype=np.float32)
    assert np.array_equal(
        stored, expected.astype(np.float16).astype(np.float32)
    )  # binary COPY kept every half: each float rounded once, to the nearest


def test_a_pairs_batch_stored_twice_keeps_one_row_per_pair_and_the_job_finds_what_mine_muss_finds(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    _run_shards(job)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.pairs_found > 0
    found = set(MinedPair.objects.filter(job=job).values_list("source_document_id", "source_key", "target_document_id", "target_key"))
    again = muss_service.pairs_batch(job, 0, MiningSequence.objects.filter(job=job).count())  # a second worker's copy of them all
    pair_store.mined_pairs_store(again)  # the COPY meets the unique key and falls back to skipping what is there
    assert MinedPair.objects.filter(job=job).count() == len(found) == len(again)

    assert found == _exact_pairs(job)


def test_the_copy_writes_each_pair_s_json_columns_as_the_orm_does(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    _run_shards(job)
    rows = muss_service.pairs_batch(job, 0, MiningSequence.objects.filter(job=job).count())
    assert rows
    odd = rows[0]._replace(
        source_key="odd", source_sentences=[0, 12, 345], target_sentences=[7],
        features={"cosine": 0.1, "margin": 1e-07, "depth": None, "char_ratio": 1.5e16, "words": 3, "note": 'a "quoted" é'},
    )  # fmt: skip
    MinedPair.objects.filter(job=job).delete()
    pair_store.mined_pairs_store([odd, *rows[1:]])  # by COPY
    by_copy = {p.source_key: (p.source_sentences, p.target_sentences, p.features) for p in MinedPair.objects.filter(job=job)}
    MinedPair.objects.filter(job=job).delete()
    MinedPair.objects.bulk_create([MinedPair(**row._asdict()) for row in [odd, *rows[1:]]])  # by the ORM
    by_orm = {p.source_key: (p.source_sentences, p.target_sentences, p.features) for p in MinedPair.objects.filter(job=job)}
    assert by_copy == by_orm and by_copy["odd"] == ([0, 12, 345], [7], odd.features)
    with connection.cursor() as cursor:  # the same jsonb, not only the same values once read back
        cursor.execute("SELECT features::text, source_sentences::text FROM alignment_minedpair WHERE source_key = 'odd'")
        assert cursor.fetchone() == (
            '{"note": "a \\"quoted\\" é", "depth": null, "words": 3, "cosine": 0.1, "margin": 0.0000001, "char_ratio": 15000000000000000}',
            "[0, 12, 345]",
        )


def test_the_neighbours_go_to_their_own_table_leave_the_sequence_rows_unwritten_and_survive_a_second_copy(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    total = MiningSequence.objects.filter(job=job).count()
    with connection.cursor() as cursor:  # a row's xmin changes when an UPDATE rewrites it
        cursor.execute("SELECT index, xmin::text FROM alignment_miningsequence WHERE job_id = %s ORDER BY index", [job.pk])
        versions = cursor.fetchall()
        muss_service.neighbours_batch(job, 0, total)
        cursor.execute("SELECT index, xmin::text FROM alignment_miningsequence WHERE job_id = %s ORDER BY index", [job.pk])
        assert cursor.fetchall() == versions
    stored = {row.sequence.index: (row.ids, row.scores, row.knn_mean) for row in MiningNeighbours.objects.select_related("sequence")}
    assert len(stored) == total and all(len(ids) == 3 and mean == pytest.approx(np.mean(s)) for ids, s, mean in stored.values())
    muss_service.neighbours_batch(job, 1, 4)  # a requeued stalled shard's batch: the key refuses the COPY, the rows are replaced
    again = {row.sequence.index: (row.ids, row.scores, row.knn_mean) for row in MiningNeighbours.objects.select_related("sequence")}
    assert again == stored


def test_past_the_in_memory_limit_the_ivf_index_with_every_cell_probed_finds_the_exact_searchs_pairs(
    owner, db, monkeypatch, settings, client
) -> None:
    settings.MINING_SEARCH_BACKEND, settings.MINING_FAISS_MAX_SEQUENCES = "faiss", 1  # every job is "past memory"
    settings.MINING_IVF_CELLS = settings.MINING_IVF_NPROBE = 2  # nprobe = cells: every cell looked into
    job = _job(owner, monkeypatch)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    _run_shards(job)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    sequences = job.documents_total // 2
    assert job.search_index == {
        "kind": "ivf",
        "cells": 2,
        "nprobe": 2,
        "pca": 0,
        "quantiser": "SQ8",
        "trained_on": sequences,
        "sequences": sequences,  # built and stored by the prepare; its parts dropped when the job succeeded
        "parts": 0,
        "megabytes": job.search_index["megabytes"],
    }
    found = set(MinedPair.objects.filter(job=job).values_list("source_document_id", "source_key", "target_document_id", "target_key"))
    assert found == _exact_pairs(job) and found
    rows = list(MiningSequence.objects.filter(job=job).order_by("index"))  # the neighbours are the exact search's, exact cosines
    vectors = np.stack([np.asarray(row.vector, dtype=np.float32) for row in rows])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # the stored halves' cosines
    truth = top_k(vectors, vectors, muss_service.muss_config(job.config).k, exclude_self=True)
    assert [[i for i, _ in row.neighbours] for row in rows] == truth.indices.tolist()
    assert np.allclose([[s for _, s in row.neighbours] for row in rows], truth.scores, atol=1e-6)
    client.force_login(owner)
    assert "Index: IVF-SQ8, 2 cells, nprobe 2" in client.get(f"/mining/{job.pk}/").content.decode()


def _exact_pairs(job) -> set:
    documents = [
        MiningDocument(str(pk), list(Sentence.objects.filter(document_id=pk).order_by("index").values_list("text", flat=True)))
        for pk in Document.objects.filter(corpus=job.source_corpus).order_by("pk").values_list("pk", flat=True)
    ]
    return {
        (int(p.source_doc), f"{p.source[0]}-{p.source[-1] + 1}", int(p.target_doc), f"{p.target[0]}-{p.target[-1] + 1}")
        for p in mine_muss(documents, encode=encode, config=muss_service.muss_config(job.config))
    }


def test_the_prepare_reads_the_corpus_sentences_in_one_query_in_document_order(
    owner, db, monkeypatch, django_assert_max_num_queries
) -> None:
    job = _job(owner, monkeypatch)
    config = muss_service.muss_config(job.config)
    monkeypatch.setattr(muss_service, "STREAM_CHUNK", 3)  # fetches of 3 rows: groups span fetches
    with django_assert_max_num_queries(1):  # was one query per document
        streamed = list(muss_service._stream_sequences(job, config))
    documents = [
        MiningDocument(str(doc.pk), list(Sentence.objects.filter(document=doc).order_by("index").values_list("text", flat=True)))
        for doc in Document.objects.filter(corpus=job.source_corpus).order_by("pk")
    ]
    assert len(documents) > 1
    assert streamed == candidate_sequences(documents, config)


def test_a_job_refreshes_the_planners_statistics_of_each_table_it_has_just_filled_before_reading_it(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)  # corpora just loaded: the planner's statistics predate them
    with CaptureQueriesContext(connection) as queries:
        mining.mining_job_prepare(job_id=job.pk, encode=encode)
        _run_shards(job)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    statements = [query["sql"] for query in queries.captured_queries]

    def first(fragment: str) -> int:
        return next(i for i, sql in enumerate(statements) if fragment in sql)

    analysed = {sql.split('"')[1]: i for i, sql in enumerate(statements) if sql.startswith("ANALYZE")}
    assert set(analysed) == {"alignment_document", "alignment_sentence", "alignment_miningsequence", "alignment_miningneighbours"}
    assert max(analysed["alignment_document"], analysed["alignment_sentence"]) < first('"alignment_sentence"."text"')  # the stream
    assert first('"alignment_sentence"."text"') < analysed["alignment_miningsequence"] < first("CROSS JOIN LATERAL")  # the search
    assert first("CROSS JOIN LATERAL") < analysed["alignment_miningneighbours"] < first("LEFT JOIN alignment_miningneighbours")


def test_sequences_are_encoded_encode_batch_a_call_and_committed_at_least_batch_at_a_time(owner, db, monkeypatch) -> None:
    job = _job(owner, monkeypatch)  # encode_batch 2
    monkeypatch.setattr(muss_service, "BATCH", 5)
    calls, stored = [], []
    original = muss_service._sequences_store

    def counted(texts):
        calls.append(len(texts))
        return encode(texts)

    def store(job_, batch, vectors, lexical) -> None:
        stored.append(len(batch))
        original(job_, batch, vectors, lexical)

    monkeypatch.setattr(muss_service, "_sequences_store", store)
    mining.mining_job_prepare(job_id=job.pk, encode=counted)
    total = MiningSequence.objects.filter(job=job).count()
    assert total > 5 and sum(calls) == sum(stored) == total
    assert stored == [5] * (total // 5) + ([total % 5] if total % 5 else [])  # a commit per 5
    assert calls == [n for size in stored for n in [2] * (size // 2) + [size % 2] if n]  # a call per 2 of each
