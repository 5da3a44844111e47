"""A worker keeps a mining job's in-memory index for the job's next shards, and lets go of it once nobody asked for
it during MINING_WORKER_INDEX_IDLE_SECONDS, or at once when the job finishes, fails or is cancelled on this worker: an
idle worker does not hold a finished job's vectors."""

from __future__ import annotations

import threading
import time

from alignment.mining import lha_search
from alignment.mining import service as mining
from alignment.mining.models import MiningJob, MiningShard
from alignment.mining.worker_index import WorkerIndex
from tests.alignment.test_mining_lha_batches import SETTINGS, embedded_news_corpora
from tests.alignment.test_mining_search import settings_refusal

EXPIRY_POLLS = 500  # 10 ms apart: a hang guard while the idle timer fires, not a timing assertion


def _gone(index: WorkerIndex) -> bool:
    for _ in range(EXPIRY_POLLS):
        if index.held() is None:
            return True
        time.sleep(0.01)
    return False


def test_an_index_is_built_once_for_its_key_and_replaced_by_another_jobs(settings) -> None:
    settings.MINING_WORKER_INDEX_IDLE_SECONDS = 60
    index: WorkerIndex[object] = WorkerIndex()
    built: list[tuple] = []

    def build(key):
        def make():
            built.append(key)
            return object()

        return make

    first = index.get((1, 10), build((1, 10)))
    assert index.get((1, 10), build((1, 10))) is first and built == [(1, 10)]
    assert index.get((1, 11), build((1, 11))) is not first and built == [(1, 10), (1, 11)]  # the job's vectors grew
    index.get((2, 5), build((2, 5)))
    index.release(1)  # another job's release leaves it
    assert index.held() == (2, 5)
    index.release(2)
    assert index.held() is None
    assert index.get((3, 0), lambda: None) is None and index.held() is None  # nothing to search: nothing kept


def test_several_shards_at_once_build_it_once(settings) -> None:
    settings.MINING_WORKER_INDEX_IDLE_SECONDS = 60
    index: WorkerIndex[object] = WorkerIndex()
    built: list[int] = []
    got: list[object] = []

    def slow_build():
        time.sleep(0.05)
        built.append(1)
        return object()

    shards = [threading.Thread(target=lambda: got.append(index.get((1, 10), slow_build))) for _ in range(3)]
    for shard in shards:
        shard.start()
    for shard in shards:
        shard.join()
    assert built == [1] and len(got) == 3 and got[0] is got[1] is got[2]
    index.release(1)


def test_an_index_unasked_for_is_let_go_of_and_one_asked_for_is_kept(settings) -> None:
    settings.MINING_WORKER_INDEX_IDLE_SECONDS = 1
    index: WorkerIndex[object] = WorkerIndex()
    kept = index.get((1, 10), object)
    for _ in range(4):  # asked for every 0.4 s: 1.6 s in all, longer than the idle time, never idle that long
        time.sleep(0.4)
        assert index.get((1, 10), object) is kept
    assert _gone(index)  # then idle: let go of
    assert index.get((1, 10), object) is not kept  # the next shard builds (or reads) it again


def test_a_worker_lets_go_of_an_lha_jobs_document_index_when_the_job_finishes(owner, run_worker, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "faiss"
    settings.MINING_WORKER_INDEX_IDLE_SECONDS = 3600  # the job's end lets go of it, not the timer
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS, shard_documents=2)
    built: list[tuple] = []
    real_get = lha_search._documents_index.get

    def recorded(key, build):
        index = real_get(key, build)
        built.append(lha_search._documents_index.held())
        return index

    lha_search._documents_index.get = recorded
    try:
        run_worker(["mining"])
    finally:
        del lha_search._documents_index.get
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED and job.shards_total == 2
    assert built and built[0][0] == job.pk  # the shards kept it (the second one's get found the first one's)
    assert lha_search._documents_index.held() is None  # the last shard's end let go of it


def test_a_job_cancelled_or_failed_on_this_worker_lets_go_of_its_index(owner, run_worker, settings) -> None:
    settings.MINING_SEARCH_BACKEND = "faiss"
    settings.MINING_WORKER_INDEX_IDLE_SECONDS = 3600
    source, target = embedded_news_corpora(owner, run_worker)
    job, _ = mining.mining_job_create(source_corpus=source, target_corpus=target, config=SETTINGS)
    mining.mining_job_prepare(job_id=job.pk)
    MiningJob.objects.filter(pk=job.pk).update(cancel_requested=True)  # pressed while the shard waited in the queue
    mining.mining_shard_execute(shard_id=MiningShard.objects.get(job=job).pk)  # reads its first batch, then sees it
    job.refresh_from_db()
    assert job.status == MiningJob.Status.CANCELLED
    assert lha_search._documents_index.held() is None
    lha_search._documents_index.keep((job.pk, 1, 3), object())
    mining._fail(job.pk, "a shard failed")
    assert lha_search._documents_index.held() is None


def test_an_idle_time_below_one_second_stops_the_settings_naming_it() -> None:
    assert "MINING_WORKER_INDEX_IDLE_SECONDS=0: at least 1 second" in settings_refusal("MINING_WORKER_INDEX_IDLE_SECONDS", "0")
    assert "MINING_WORKER_INDEX_IDLE_SECONDS" in settings_refusal("MINING_WORKER_INDEX_IDLE_SECONDS", "soon")  # not a number
