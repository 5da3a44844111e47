"""Where a mining job's work runs: its prepare (which encodes a MUSS job's sequences) on the queue MINING_PREPARE_QUEUE
names, its shards (search and pairs) on "mining", so GPU hosts can take the encoding and CPU hosts the search."""

from __future__ import annotations

from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningSequence, MiningShard
from alignment.services import corpus_get_or_create
from tests.alignment.test_mining_search import _import_paraphrases, settings_refusal


def test_the_prepare_runs_on_the_named_queue_and_the_shards_on_mining(owner, run_worker, settings) -> None:
    settings.MINING_PREPARE_QUEUE = "embedding"
    corpus, _ = corpus_get_or_create(name="Paraphrases", language="en", owner=owner)
    _import_paraphrases(corpus)
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4}, shard_sequences=4)

    run_worker(["mining"])  # a CPU host: the encoding is not its work
    job.refresh_from_db()
    assert job.status == MiningJob.Status.QUEUED and not MiningSequence.objects.filter(job=job).exists()

    run_worker(["embedding"])  # a GPU host: encodes, queues the shards, runs none of them
    job.refresh_from_db()
    assert MiningSequence.objects.filter(job=job).count() > 4 and MiningShard.objects.filter(job=job).exists()
    assert job.status != MiningJob.Status.SUCCEEDED and not MinedPair.objects.filter(job=job).exists()

    run_worker(["mining"])
    job.refresh_from_db()
    assert job.status == MiningJob.Status.SUCCEEDED, job.error
    assert job.pairs_found == MinedPair.objects.filter(job=job).count() > 0


def test_a_queue_name_that_is_not_one_stops_the_settings() -> None:
    assert "MINING_PREPARE_QUEUE='gpu hosts': a queue name" in settings_refusal("MINING_PREPARE_QUEUE", "gpu hosts")
