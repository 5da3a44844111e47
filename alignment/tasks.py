"""Background tasks. Thin: they take ids, load what they need and call a service."""

from __future__ import annotations

from django.conf import settings
from procrastinate.contrib.django import app

from alignment import services
from alignment.aligning import service as aligning
from alignment.aligning.measures import app_encoder, run_measure
from alignment.importing.jobs import IMPORT_TASK, import_job_execute
from alignment.importing.models import ImportJob
from alignment.jobs.wrapper import job_task
from alignment.mining.models import MiningJob, MiningShard
from alignment.mining.service import mining_job_prepare, mining_shard_execute
from alignment.models import AlignmentRun, EmbeddingRun


@job_task(queue="embedding", name="alignment.embed_corpus", model=EmbeddingRun, id_arg="run_id")
def embed_corpus(*, run_id: int) -> None:
    """Embed the missing sentences of an EmbeddingRun's corpus (idempotent, resumable)."""
    services.embedding_run_execute(
        run_id=run_id,
        load_encoder=app_encoder,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        encode_batch_size=settings.ENCODER_BATCH_SIZE,
    )


@app.periodic(cron="* * * * *", periodic_id="retry_stalled_jobs")
@app.task(queue="maintenance", name="alignment.retry_stalled_jobs", pass_context=True)
async def retry_stalled_jobs(context, timestamp: int) -> None:
    """Requeue jobs whose worker died (no heartbeat); resumable tasks continue where they stopped."""
    await services.stalled_jobs_retry_async(context.app, seconds_since_heartbeat=settings.STALLED_JOB_SECONDS)


@job_task(queue="alignment", name="alignment.align_pairs", model=AlignmentRun, id_arg="run_id")
def align_pairs(*, run_id: int) -> None:
    """Align the pairs of an AlignmentRun that have no stored result yet (idempotent, resumable, cancellable)."""
    aligning.alignment_run_execute(run_id=run_id, build_measure=run_measure, device=settings.ENCODER_DEVICE)


@job_task(queue="mining", name="alignment.mining_prepare", model=MiningJob, id_arg="job_id")
def mining_prepare(*, job_id: int) -> None:
    """Document vectors and shards of a mining job; queues one task per shard."""
    name = MiningJob.objects.values_list("config__encoder", flat=True).get(pk=job_id)

    def encode(texts: list[str]):
        return app_encoder(name).encode(texts, batch_size=settings.ENCODER_BATCH_SIZE)

    mining_job_prepare(job_id=job_id, encode=encode)


@job_task(queue="mining", name="alignment.mining_shard", model=MiningShard, id_arg="shard_id")
def mining_shard(*, shard_id: int) -> None:
    """Mine one shard's source documents (resumable, cancellable, never duplicates a pair)."""
    mining_shard_execute(shard_id=shard_id)


@job_task(queue="alignment", name=IMPORT_TASK, model=ImportJob)
def import_files(*, job_id: int) -> None:
    """Import the files staged by the Import page, then queue embedding and alignment (resumable)."""
    import_job_execute(job_id=job_id)
