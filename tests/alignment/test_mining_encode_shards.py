"""A large MUSS job's sequences are encoded in shards, so several workers encode one job: the same rows and pairs as a
prepare encoding them alone, each shard resumable and cancellable between batches, its documents checked against the
count the prepare made, and the shards queued where the encoder runs."""

from __future__ import annotations

import numpy as np
import pytest

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import muss_service
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningSequence, MiningShard
from alignment.mining.muss_service import LARGEST_SHARD, encode_cuts
from alignment.models import Sentence
from alignment.services import corpus_get_or_create
from tests.alignment.test_muss_rows import TEXTS, encode

CONFIG = {"k": 3, "encode_batch": 2, "min_margin": 0.5, "max_distance": 1.5}
ENCODE = MiningShard.Phase.ENCODE


@pytest.fixture(autouse=True)
def _commits_of_encode_batch(monkeypatch) -> None:
    monkeypatch.setattr(muss_service, "BATCH", 1)  # a commit per encode_batch (2) sequences: batches to resume after


@pytest.fixture
def deferred(monkeypatch) -> list[tuple[str, dict]]:
    """Every task the mining service queues, as (task name, its queue options); none runs: the tests run them here."""
    queued: list[tuple[str, dict]] = []

    def record(name, job=None, *, options=None, **task_kwargs) -> None:
        queued.append((name, {**(options or {}), **task_kwargs}))

    monkeypatch.setattr(mining, "enqueue_on_commit", record)
    return queued


@pytest.fixture(autouse=True)
def small_shards(settings) -> None:
    settings.MINING_ENCODE_SHARD_SEQUENCES = 3  # the corpus's three documents: a shard each


def _job(owner, shard_sequences: int = 3) -> MiningJob:
    corpus, _ = corpus_get_or_create(name="Encode shards", language="en", owner=owner)
    if not corpus.documents.exists():
        files = [(f"{title}-adv.txt", text.encode()) for title, text in TEXTS.items()]
        assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    return mining.mining_job_create(source_corpus=corpus, method="muss", config=CONFIG, shard_sequences=shard_sequences)[0]


def _run(job: MiningJob, encoder=encode, *, order: str = "index") -> None:
    """What the workers do: the prepare, its shards (encode shards in ``order``), the prepare again when the last
    encode shard hands the job back to it, then the neighbours and pairs shards."""
    mining.mining_job_prepare(job_id=job.pk, encode=encoder)
    while True:
        job.refresh_from_db()
        if job.status == MiningJob.Status.QUEUED:
            mining.mining_job_prepare(job_id=job.pk, encode=encoder)
            continue
        shard = MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("phase", order).first()
        if shard is None or job.status != MiningJob.Status.RUNNING:
            return
        mining.mining_shard_execute(shard_id=shard.pk, encode=encoder)


def _rows(job: MiningJob) -> list[tuple]:
    rows = MiningSequence.objects.filter(job=job).order_by("index")
    return [(r.index, r.document_id, r.start, r.end, r.text, tuple(float(x) for x in r.vector)) for r in rows]


def _pairs(job: MiningJob) -> set[tuple]:
    return set(MinedPair.objects.filter(job=job).values_list("source_text", "target_text", "score"))


def test_encode_shards_store_the_rows_and_find_the_pairs_of_a_prepare_encoding_alone(owner, db, deferred, settings) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    shards = list(MiningShard.objects.filter(job=job, phase=ENCODE).order_by("index"))
    job.refresh_from_db()
    assert len(shards) > 1 and not MiningSequence.objects.filter(job=job).exists()  # counted, not encoded
    assert [s.start for s in shards] == [0] + [s.end for s in shards[:-1]] and job.documents_total == shards[-1].end
    assert all(a.document_last < b.document_first for a, b in zip(shards, shards[1:]))
    assert job.status == MiningJob.Status.RUNNING and job.shards_total == len(shards) and job.unit == "sequences encoded (in shards)"
    assert [name for name, _ in deferred] == ["alignment.mining_prepare"] + ["alignment.mining_shard"] * len(shards)

    for shard in reversed(shards):  # any order, as several workers take them
        job.refresh_from_db()
        assert job.status == MiningJob.Status.RUNNING  # until the last one hands the job back to its prepare
        mining.mining_shard_execute(shard_id=shard.pk, encode=encode)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.QUEUED and job.documents_done == shards[-1].end
    assert deferred[-1][0] == "alignment.mining_prepare"
    _run(job)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert job.shards_done == job.shards_total == len(shards) + 2 * MiningShard.objects.filter(job=job, phase="neighbours").count()
    assert job.documents_done == job.documents_total == 2 * shards[-1].end and job.unit == "sequence steps (neighbours, then pairs)"

    settings.MINING_ENCODE_SHARD_SEQUENCES = 0
    alone = _job(owner, shard_sequences=4)  # another setting, so another job on the same corpus
    _run(alone)
    alone.refresh_from_db()
    assert alone.status == MiningJob.Status.SUCCEEDED and not alone.shards.filter(phase=ENCODE).exists()
    assert [row[1:] for row in _rows(job)] == [row[1:] for row in _rows(alone)]  # same sequences, documents, vectors, order
    assert _pairs(job) == _pairs(alone) and _pairs(job)


def test_a_hybrid_job_encoded_in_shards_stores_the_lexical_vectors_of_a_prepare_encoding_alone(owner, db, deferred, settings) -> None:
    config = {**CONFIG, "retrieval": "hybrid"}
    corpus = _job(owner).source_corpus
    sharded = mining.mining_job_create(source_corpus=corpus, method="muss", config=config, shard_sequences=3)[0]
    _run(sharded)
    settings.MINING_ENCODE_SHARD_SEQUENCES = 0
    alone = mining.mining_job_create(source_corpus=corpus, method="muss", config=config, shard_sequences=4)[0]
    _run(alone)
    for job in (sharded, alone):
        job.refresh_from_db()
        assert job.status == MiningJob.Status.SUCCEEDED and job.retrieval == MiningJob.Retrieval.HYBRID, job.error
    assert sharded.shards.filter(phase=ENCODE).count() > 1 and not alone.shards.filter(phase=ENCODE).exists()
    lexical = [
        [str(v) for v in MiningSequence.objects.filter(job=job).order_by("index").values_list("lexical", flat=True)]
        for job in (sharded, alone)
    ]
    assert lexical[0] == lexical[1] and "None" not in lexical[0]  # the job's one IDF, read by every shard
    assert _rows(sharded) == _rows(alone) and _pairs(sharded) == _pairs(alone) and _pairs(sharded)


def test_the_shards_run_the_encoder_on_the_prepare_queue_and_the_search_on_mining(owner, db, deferred, settings) -> None:
    settings.MINING_PREPARE_QUEUE = "embedding"
    job = _job(owner)
    _run(job)
    queues = {}
    for name, options in deferred:
        queues.setdefault(name, set()).add(options.get("queue", "mining"))
    assert queues["alignment.mining_prepare"] == {"embedding"}  # the prepare and its continuation, which builds the index
    encode_count = MiningShard.objects.filter(job=job, phase=ENCODE).count()
    shard_queues = [options.get("queue", "mining") for name, options in deferred if name == "alignment.mining_shard"]
    assert shard_queues[:encode_count] == ["embedding"] * encode_count and set(shard_queues[encode_count:]) == {"mining"}


def test_an_encode_shard_that_died_resumes_after_its_last_stored_batch(owner, db, deferred) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    shard = max(MiningShard.objects.filter(job=job, phase=ENCODE), key=lambda s: s.end - s.start)
    assert shard.end - shard.start >= 3  # two batches of two at least
    calls: list[list[str]] = []

    def dies(texts):
        calls.append(texts)
        if len(calls) == 2:
            raise RuntimeError("the encoder's host died")
        return encode(texts)

    with pytest.raises(RuntimeError, match="host died"):
        mining.mining_shard_execute(shard_id=shard.pk, encode=dies)
    shard.refresh_from_db()
    job.refresh_from_db()
    assert shard.position == shard.start + 2 and MiningSequence.objects.filter(job=job).count() == 2  # the first batch stays
    assert job.status == MiningJob.Status.FAILED and f"shard {shard.index}" in job.error and "host died" in job.error

    again, created = mining.mining_job_create(source_corpus=job.source_corpus, method="muss", config=CONFIG, shard_sequences=3)
    assert again.pk == job.pk and not created
    encoded: list[str] = []

    def counted(texts):
        encoded.extend(texts)
        return encode(texts)

    _run(job, counted)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    rows = _rows(job)
    assert [row[0] for row in rows] == list(range(job.documents_total // 2))  # each sequence once
    assert not set(calls[0]) & set(encoded)  # the batch stored before the crash was not encoded again
    assert len(encoded) == len(rows) - 2 and len({row[4] for row in rows}) == len(rows)


def test_a_cancel_stops_an_encode_shard_between_batches_and_the_job_resumes_there(owner, db, deferred) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    shard = MiningShard.objects.filter(job=job, phase=ENCODE).order_by("-end").first()
    calls = []

    def encode_then_cancel(texts):
        calls.append(texts)
        mining.mining_job_cancel(job=job)  # the user's cancel while the first batch is encoded
        return encode(texts)

    mining.mining_shard_execute(shard_id=shard.pk, encode=encode_then_cancel)
    job.refresh_from_db()
    shard.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and len(calls) == 1
    assert shard.status == MiningShard.Status.QUEUED and shard.position == shard.start + 2
    assert MiningSequence.objects.filter(job=job).count() == 2  # the batch encoded before the cancel is kept

    mining.mining_job_create(source_corpus=job.source_corpus, method="muss", config=CONFIG, shard_sequences=3)
    _run(job)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert [row[0] for row in _rows(job)] == list(range(job.documents_total // 2))


def test_a_document_changed_after_the_count_fails_its_shard_with_the_documents_named(owner, db, deferred) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    shard = MiningShard.objects.filter(job=job, phase=ENCODE).order_by("index").last()
    Sentence.objects.filter(document_id=shard.document_last).order_by("-index").first().delete()  # one sequence fewer

    with pytest.raises(ValueError, match="no longer hold"):
        mining.mining_shard_execute(shard_id=shard.pk, encode=encode)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.FAILED
    assert f"encode shard {shard.index}: ValueError: documents {shard.document_first}-{shard.document_last} no longer hold" in job.error
    assert "(the corpus changed while it was mined); start a new job" in job.error
    assert not MiningSequence.objects.filter(job=job, index__gte=shard.start).exclude(index__lt=shard.start + 2).exists()


def test_an_encode_shard_without_an_encoder_fails_the_job_and_says_so(owner, db, deferred) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    shard = MiningShard.objects.filter(job=job, phase=ENCODE).first()
    with pytest.raises(ValueError, match="needs an encoder"):
        mining.mining_shard_execute(shard_id=shard.pk)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.FAILED and "needs an encoder to embed its sequences" in job.error
    assert not MiningSequence.objects.filter(job=job).exists()


def test_a_job_cancelled_in_its_pairs_phase_resumes_its_pairs_shards(owner, db, deferred) -> None:
    job = _job(owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    while not MiningShard.objects.filter(job=job, phase="pairs").exists():
        job.refresh_from_db()
        if job.status == MiningJob.Status.QUEUED:
            mining.mining_job_prepare(job_id=job.pk, encode=encode)
            continue
        shard = MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("phase", "index").first()
        mining.mining_shard_execute(shard_id=shard.pk, encode=encode)
    mining.mining_job_cancel(job=job)
    pairs = MiningShard.objects.filter(job=job, phase="pairs").order_by("index").first()
    mining.mining_shard_execute(shard_id=pairs.pk)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED and not MinedPair.objects.filter(job=job).exists()

    mining.mining_job_create(source_corpus=job.source_corpus, method="muss", config=CONFIG, shard_sequences=3)
    deferred.clear()
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    open_pairs = set(MiningShard.objects.filter(job=job, phase="pairs").exclude(status="succeeded").values_list("pk", flat=True))
    assert open_pairs and {options["shard_id"] for _, options in deferred} == open_pairs  # before, it queued nothing and hung
    _run(job)
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert job.pairs_found == MinedPair.objects.filter(job=job).count() > 0
    assert not MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).exists()


def test_encode_shards_are_cut_large_first_and_small_at_the_end_at_document_boundaries() -> None:
    documents = np.arange(101, 201)  # 100 documents of 10 sequences
    ends = np.arange(1, 101) * 10
    cuts = encode_cuts(documents, ends, 10)
    sizes = [end - start for _, _, start, end in cuts]
    assert cuts[0][:3] == (101, 113, 0) and sizes[0] == 130  # an eighth of 1,000, to the end of the document reaching it
    assert [start for _, _, start, _ in cuts] == [0] + [end for *_, end in cuts[:-1]] and cuts[-1][1:] == (200, 990, 1000)
    assert all(b[0] == a[1] + 1 for a, b in zip(cuts, cuts[1:]))  # every document in exactly one shard
    assert sizes == sorted(sizes, reverse=True) and sizes[-3:] == [10, 10, 10]  # the workers finish on small shards
    assert len(cuts) < 1000 // 10  # far fewer tasks than shards of the smallest size

    big = encode_cuts(np.arange(1000), np.arange(1, 1001) * 1000, 500)  # a million sequences
    assert max(end - start for *_, start, end in big) == 20_000 == LARGEST_SHARD * 500  # no shard past the bound
    assert encode_cuts(np.array([7, 8]), np.array([5, 2_000]), 10) == [(7, 8, 0, 2_000)]  # a document is never split


def test_a_list_of_jobs_says_which_are_encoding_without_a_query_per_job(owner, db, deferred, django_assert_max_num_queries) -> None:
    from alignment.mining.selectors import mining_jobs_visible_to

    encoding, other = _job(owner), _job(owner, shard_sequences=4)
    mining.mining_job_prepare(job_id=encoding.pk, encode=encode)  # its encode shards wait
    _run(other)  # done: past its encode phase
    finished = _job(owner, shard_sequences=5)
    _run(finished)
    with django_assert_max_num_queries(2):
        units = {job.pk: job.unit for job in mining_jobs_visible_to(owner)}
    assert units[encoding.pk] == "sequences encoded (in shards)" and encoding.unit == units[encoding.pk]
    assert units[other.pk] == units[finished.pk] == "sequence steps (neighbours, then pairs)"
