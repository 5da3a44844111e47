"""A large embedding run's missing sentences in shards, each its own task, so that several workers embed one corpus.

The run's own task (services.embedding_run_execute) splits the sentences without a vector into
:class:`~alignment.models.EmbeddingShard` ranges of ``EMBEDDING_SHARD_SENTENCES`` sentence ids
(the last one open-ended), queues one ``alignment.embed_shard`` task per shard and ends, leaving the
run running. Each shard embeds its range as an unsharded run does (services.embed_missing: each batch
committed with the run's progress, only sentences still without a vector, time slices), so a requeued
or retried shard never embeds a sentence twice. The shard that finishes last builds the encoder's
vector index and marks the run succeeded; a failed shard fails the run, and the others stop at their
next batch, as they do once the run is cancelled (services.embedding_run_cancel); a retry queues the
shards not done. Shards take their lane from the run's owner, as alignment shards do
(alignment/aligning/shards.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_once_on_commit
from alignment.jobs.models import Pickup, error_text
from alignment.jobs.slices import TimeSlice
from alignment.models import EmbeddingRun, EmbeddingShard, Encoder, Sentence
from alignment.services import RunStopped, embed_missing, encoder_get_or_create, encoder_index_ensure, sentences_missing_embedding
from models_ml.similarity.encoders import SentenceEncoder

SHARD_TASK = "alignment.embed_shard"


def embedding_shards_start(run: EmbeddingRun, missing: QuerySet[Sentence]) -> EmbeddingRun:
    """Split ``missing`` into shards of EMBEDDING_SHARD_SENTENCES ids (the first time) and queue those not done."""
    size = max(1, int(settings.EMBEDDING_SHARD_SENTENCES))
    with transaction.atomic():
        EmbeddingRun.objects.select_for_update().get(pk=run.pk)
        if not EmbeddingShard.objects.filter(run=run).exists():
            after, ranges = 0, []
            while True:  # every size-th missing id, by index: one bounded query per shard
                ends = list(missing.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[size - 1 : size])
                ranges.append((after, ends[0] if ends else None))
                if not ends:
                    break
                after = ends[0]
            EmbeddingShard.objects.bulk_create(
                EmbeddingShard(run=run, index=i, after_id=start, through_id=end) for i, (start, end) in enumerate(ranges)
            )
        open_shards = list(EmbeddingShard.objects.filter(run=run).exclude(status=EmbeddingShard.Status.SUCCEEDED))
        for shard in open_shards:
            shard.mark_queued()  # a failed shard is queued again; a waiting one stays as it is
            enqueue_once_on_commit(SHARD_TASK, shard, shard_id=shard.pk)
    if not open_shards:  # every shard embedded; the index build was cancelled (or lost): build it, then finish
        encoder_index_ensure(encoder=Encoder.objects.get(name=run.encoder_name), run=run)
        run.mark_succeeded()
    return EmbeddingRun.objects.get(pk=run.pk)


def embedding_shard_execute(
    *, shard_id: int, load_encoder: Callable[[str], SentenceEncoder], batch_size: int, encode_batch_size: int = 32,
    time_slice: TimeSlice | None = None,
) -> EmbeddingShard:  # fmt: skip
    """Embed the shard's sentences still without a vector; the last shard done builds the index and finishes the run."""
    shard = EmbeddingShard.objects.select_related("run", "run__corpus").get(pk=shard_id)
    run = shard.run
    if run.status != EmbeddingRun.Status.RUNNING:
        return shard  # the run failed while this task waited: the shard waits for a retry
    pickup = shard.pickup()
    if pickup is Pickup.SKIP:
        return shard
    if pickup is Pickup.GAVE_UP:
        run.mark_failed(f"shard {shard.index}: {shard.error}")
        return shard
    try:
        encoder = load_encoder(run.encoder_name)
        encoder_row = encoder_get_or_create(name=run.encoder_name, dimensions=encoder.dimensions)  # the run's task loads none
        missing = sentences_missing_embedding(corpus=run.corpus, encoder=encoder_row).filter(pk__gt=shard.after_id)
        if shard.through_id is not None:
            missing = missing.filter(pk__lte=shard.through_id)
        embed_missing(run, shard, encoder, encoder_row, missing, batch_size, encode_batch_size, time_slice)
    except RunStopped:  # the run was cancelled (or failed in another shard): stop after the batch in flight
        shard.mark_cancelled()
        return EmbeddingShard.objects.get(pk=shard_id)
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the shard running: the task's retry resumes it
            shard.mark_failed(error_text(exc))
            run.mark_failed(f"shard {shard.index}: {error_text(exc)}")
        raise
    shard.mark_succeeded()
    with transaction.atomic():
        EmbeddingRun.objects.select_for_update().get(pk=run.pk)  # the last two shards may finish together
        last = not EmbeddingShard.objects.filter(run=run).exclude(status=EmbeddingShard.Status.SUCCEEDED).exists()
    if last:
        run.wake_alignment()  # every vector is stored: waiting alignment goes on during the index build
        try:
            encoder_index_ensure(encoder=encoder_row, run=run)
        except RunStopped:  # cancelled during the build: the vectors are all stored, a retry builds the index
            return EmbeddingShard.objects.get(pk=shard_id)
        run.mark_succeeded()
    return EmbeddingShard.objects.get(pk=shard_id)
