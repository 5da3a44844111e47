"""Background tasks. Thin: they take ids, load what they need and call a service.

The services are imported inside each task, on its first run: a worker process then starts (and
starts again after a crash, under ``runapp``'s supervisor) in the time it takes to load Django,
not the seconds torch, POT and scikit-learn take to import.
"""

from __future__ import annotations

from django.conf import settings
from procrastinate.contrib.django import app

from alignment.importing.models import ImportJob
from alignment.jobs.slices import TimeSlice
from alignment.jobs.stalled import stalled_jobs_retry_async
from alignment.jobs.wrapper import job_task
from alignment.mining.models import MiningJob, MiningShard
from alignment.models import AlignmentRun, AlignmentShard, EmbeddingRun, EmbeddingShard


@job_task(queue="embedding", name="alignment.embed_corpus", model=EmbeddingRun, id_arg="run_id")
def embed_corpus(*, run_id: int) -> None:
    """Embed the missing sentences of an EmbeddingRun's corpus (idempotent, resumable, in time slices)."""
    from alignment import services
    from alignment.aligning.measures import app_encoder

    services.embedding_run_execute(
        run_id=run_id,
        load_encoder=app_encoder,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        encode_batch_size=settings.ENCODER_BATCH_SIZE,
        time_slice=TimeSlice.from_settings(),
    )


def stalled_sweep_cron(seconds: int) -> str:
    """The sweep's schedule: every minute, or every ``seconds`` (a divisor of 60) with croniter's sixth, seconds field."""
    return "* * * * *" if seconds == 60 else f"* * * * * */{seconds}"


@app.periodic(cron=stalled_sweep_cron(settings.STALLED_JOB_SWEEP_SECONDS), periodic_id="retry_stalled_jobs")
@app.task(queue="maintenance", name="alignment.retry_stalled_jobs", pass_context=True)
async def retry_stalled_jobs(context, timestamp: int) -> None:
    """Requeue jobs whose worker died (no heartbeat); resumable tasks continue where they stopped."""
    await stalled_jobs_retry_async(context.app, seconds_since_heartbeat=settings.STALLED_JOB_SECONDS)


@job_task(queue="alignment", name="alignment.align_pairs", model=AlignmentRun, id_arg="run_id")
def align_pairs(*, run_id: int) -> None:
    """Align the pairs of an AlignmentRun that have no stored result yet (idempotent, resumable, cancellable, in time slices)."""
    from alignment.aligning import service as aligning
    from alignment.aligning.measures import run_measure

    aligning.alignment_run_execute(
        run_id=run_id, build_measure=run_measure, device=settings.ENCODER_DEVICE, time_slice=TimeSlice.from_settings()
    )


@job_task(queue="embedding", name="alignment.embed_shard", model=EmbeddingShard, id_arg="shard_id")
def embed_shard(*, shard_id: int) -> None:
    """Embed one shard of a large EmbeddingRun's sentences (resumable, in time slices); the last one finishes the run."""
    from alignment.aligning.measures import app_encoder
    from alignment.embedding_shards import embedding_shard_execute

    embedding_shard_execute(
        shard_id=shard_id,
        load_encoder=app_encoder,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        encode_batch_size=settings.ENCODER_BATCH_SIZE,
        time_slice=TimeSlice.from_settings(),
    )


@job_task(queue="alignment", name="alignment.align_shard", model=AlignmentShard, id_arg="shard_id")
def align_shard(*, shard_id: int) -> None:
    """Align one shard of a large AlignmentRun's pairs (resumable, cancellable, in time slices); the last one finishes the run."""
    from alignment.aligning.measures import run_measure
    from alignment.aligning.shards import alignment_shard_execute

    alignment_shard_execute(
        shard_id=shard_id, build_measure=run_measure, device=settings.ENCODER_DEVICE, time_slice=TimeSlice.from_settings()
    )


@job_task(queue="mining", name="alignment.mining_prepare", model=MiningJob, id_arg="job_id")
def mining_prepare(*, job_id: int) -> None:
    """Document vectors and shards of a mining job; queues one task per shard."""
    from alignment.mining.service import mining_job_prepare

    mining_job_prepare(job_id=job_id, encode=_job_encoder(job_id))


def _job_encoder(job_id: int):
    """``encode(texts)`` with the mining job's encoder, named and loaded (once per process) on its first call: a shard
    that encodes nothing asks nothing."""

    name: list[str] = []

    def encode(texts: list[str]):
        from alignment.aligning.measures import app_encoder

        if not name:
            name.append(MiningJob.objects.values_list("config__encoder", flat=True).get(pk=job_id))
        return app_encoder(name[0]).encode(texts, batch_size=settings.ENCODER_BATCH_SIZE)

    return encode


@job_task(queue="mining", name="alignment.mining_shard", model=MiningShard, id_arg="shard_id")
def mining_shard(*, shard_id: int) -> None:
    """Mine one shard's source documents, or encode a MUSS encode shard's sequences (resumable, cancellable, never
    duplicates a pair or a sequence). Encode shards are queued on MINING_PREPARE_QUEUE."""
    from alignment.mining.service import mining_shard_execute

    job_id = MiningShard.objects.values_list("job_id", flat=True).get(pk=shard_id)
    mining_shard_execute(shard_id=shard_id, encode=_job_encoder(job_id))


@job_task(queue="imports", name="alignment.import_files", model=ImportJob)
def import_files(*, job_id: int) -> None:
    """Import the files staged by the Import page, then queue embedding and alignment (resumable, in time slices)."""
    from alignment.importing.jobs import import_job_execute

    import_job_execute(job_id=job_id, time_slice=TimeSlice.from_settings())
