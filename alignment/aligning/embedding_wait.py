"""An alignment run waits for its corpus's embedding run instead of encoding the same sentences itself.

An import queues an embedding run and an alignment run over the new pairs together. With the two workers the app
runs by default, the alignment started beside the embedding, found its pairs' vectors missing and encoded them
itself: every sentence was encoded twice, once by each run, and each run had one core instead of two
(docs/benchmarks.md, "An import's embedding and alignment"). Now a run, or a shard of one, whose measures read stored
vectors, and whose pairs still have a sentence without a vector of its encoder while an embedding run of that
encoder is queued or running on its corpus, gives its worker back (:class:`~alignment.jobs.slices.WaitFor`) and
looks again ``ALIGN_EMBEDDING_WAIT_SECONDS`` later, below every other job's priority, so that the embedding's own
tasks go first, in its owner's lane too. It records the run it waits for (``AlignmentRun.waiting_for``), which the
run's card shows. Once that run has stored every vector (before its index build), and again when it finishes
(succeeded, failed or cancelled), the waiting tasks of its corpus's alignment runs are brought forward
(:func:`waiting_runs_wake`, which finds them by the corpus: a shard that goes on must not hide another one that still
waits): a 10,000-pair run's 200 shards do not look again every few seconds while a corpus of half a million
sentences embeds, and do not wait past the vectors' storing for their next look. (A task that checked just before
the wake-up and is queued again just after it misses it; its next look, at most ``ALIGN_EMBEDDING_WAIT_SECONDS``
later, finds the vectors.)

A run waits only for an embedding run that shows life: queued, or storing a batch, within
``ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS`` (:func:`embedding_alive`). One that has been queued longer and never started,
or stored nothing for that long (no worker takes the ``embedding`` queue, or its worker is gone), would otherwise
hold the alignment for as long as nobody noticed; the run then encodes what it lacks itself, as before.

Never waited for: the embedding outside a worker (a command's ``--now`` or a test runs the run to its end), by a run
of a few pairs (``INTERACTIVE_PAIRS``: someone waits at a page for it) or one whose measures read no stored vector
(lexical ones), and an embedding run that failed or was cancelled. These encode what is missing themselves, as
before. The check is at most five small queries over the task's pairs, at most ``ALIGN_SHARD_PAIRS`` of them.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from alignment.aligning.models import AlignmentShard
from alignment.aligning.scoring import PairScorer
from alignment.jobs.enqueue import BULK_PRIORITY, SPARE_LANES_LIKE, SPARE_PRIORITY
from alignment.jobs.models import ACTIVE_STATUSES, JobStatus
from alignment.jobs.slices import WAITING_PRIORITY, TimeSlice, WaitFor
from alignment.models import INTERACTIVE_PAIRS, AlignmentRun, DocumentPair, EmbeddingRun, Encoder
from alignment.services import sentences_missing_embedding
from models_ml.aligning.aligner_config import LEARNED


def embedding_to_wait_for(run: AlignmentRun, scorer: PairScorer, pair_ids: list[int]) -> EmbeddingRun | None:
    """The embedding run that will store vectors ``pair_ids``' sentences lack and the run would encode itself; None
    when there is none or the run does not wait (see the module docstring)."""
    if run.pairs_total <= INTERACTIVE_PAIRS or not pair_ids or not reads_stored_vectors(scorer):
        return None
    encoder = scorer.aligner.config.encoder
    embedding = EmbeddingRun.objects.filter(corpus_id=run.corpus_id, encoder_name=encoder, status__in=ACTIVE_STATUSES).first()
    if embedding is None or not embedding_alive(embedding):
        return None
    documents = DocumentPair.objects.filter(pk__in=pair_ids).values_list("simple_document_id", "complex_document_id")
    missing = sentences_missing_embedding(corpus=run.corpus, encoder=Encoder.objects.filter(name=encoder).first())
    return embedding if missing.filter(document_id__in=[document for pair in documents for document in pair]).exists() else None


def embedding_alive(embedding: EmbeddingRun) -> bool:
    """Whether ``embedding`` was queued, or stored a batch of vectors (its heartbeat, in any of its shards), within
    ``ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS``: a run waits no longer for one that makes no progress."""
    last = max(moment for moment in (embedding.created_at, embedding.heartbeat_at) if moment is not None)
    return timezone.now() - last <= timedelta(seconds=settings.ALIGN_EMBEDDING_WAIT_LIMIT_SECONDS)


def reads_stored_vectors(scorer: PairScorer) -> bool:
    """Whether the scorer reads the stored sentence vectors (cosine, or a learned scorer with the encoder's feature)."""
    return "embedding_cosine" in scorer.measures or (LEARNED in scorer.measures and scorer.aligner.uses_encoder)


def wait_for_embedding(
    run: AlignmentRun, scorer: PairScorer, pair_ids: list[int], time_slice: TimeSlice | None, *, shard: bool = False
) -> None:
    """Raise :class:`~alignment.jobs.slices.WaitFor` when the run should wait (:func:`embedding_to_wait_for`), after
    recording what for; otherwise the run's own task forgets an earlier wait, so that the run's card no longer shows it
    (a ``shard`` that goes on does not: another shard of the run may still wait; the card's line ends with the
    embedding run). Only in a worker (``time_slice`` given): a run started outside one (``manage.py align --now``, a
    test) runs to its end, and nothing would pick it up again."""
    embedding = embedding_to_wait_for(run, scorer, pair_ids) if time_slice is not None else None
    if embedding is None:
        if not shard:
            AlignmentRun.objects.filter(pk=run.pk, waiting_for__isnull=False).update(waiting_for=None)
        return
    AlignmentRun.objects.filter(pk=run.pk).update(waiting_for=embedding)
    raise WaitFor(
        settings.ALIGN_EMBEDDING_WAIT_SECONDS, f"alignment run {run.pk} waits for embedding run {embedding.pk} to store its vectors"
    )


def running_wait_line(run: AlignmentRun) -> str:
    """What a running run's card says while the run, or shards of it, wait for the corpus's embedding run; "" when
    none does. A shard that goes on leaves the run's record of the wait standing (another may still wait), so a run
    with shards counts those whose tasks wait (queued again at ``WAITING_PRIORITY``): one query, while the record stands."""
    note = run.waiting_note()
    if not note:
        return ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), count(*) FILTER (WHERE j.status = 'todo' AND j.priority = %s) FROM {AlignmentShard._meta.db_table} AS s "
            "LEFT JOIN procrastinate_jobs AS j ON j.id = s.procrastinate_job_id WHERE s.run_id = %s",
            [WAITING_PRIORITY, run.pk],
        )
        total, waiting = cursor.fetchone()
    if not total:
        return f"{note[0].upper()}{note[1:]}."
    if not waiting:
        return ""  # the record stands until the embedding run ends, but no shard waits any more
    if waiting == total:
        return f"{'Its shard is' if total == 1 else f'All {total} of its shards are'} {note}."
    return f"{waiting} of its {total} shards {'is' if waiting == 1 else 'are'} {note}; the others go on meanwhile."


def waiting_runs_wake(embedding_id: int) -> int:
    """Bring forward the waiting tasks of the active alignment runs (and their shards) of the corpus of embedding run
    ``embedding_id``, which has stored every vector or finished: a worker takes them at its next poll, at bulk work's priority again (a run
    of a few pairs never waits; a shard in a spare lane at that lane's), not behind everyone's bulk work. Found by the
    corpus and the waiting priority, not by the run's record of its wait, which a run's own task clears when it goes
    on. (A task woken that still lacks vectors, from another embedding run, waits again.) The number brought forward."""
    corpus = EmbeddingRun.objects.filter(pk=embedding_id).values("corpus_id")
    runs = dict(AlignmentRun.objects.filter(corpus_id__in=corpus, status__in=ACTIVE_STATUSES).values_list("pk", "procrastinate_job_id"))
    if not runs:
        return 0
    shards = AlignmentShard.objects.filter(run_id__in=list(runs), status=JobStatus.QUEUED, yielded=True)
    tasks = [task for task in [*runs.values(), *shards.values_list("procrastinate_job_id", flat=True)] if task is not None]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE procrastinate_jobs SET scheduled_at = now(), priority = CASE WHEN lock LIKE %s THEN %s ELSE %s END "
            "WHERE id = ANY(%s) AND status = 'todo' AND priority = %s",
            [SPARE_LANES_LIKE, SPARE_PRIORITY, BULK_PRIORITY, tasks, WAITING_PRIORITY],
        )
        return cursor.rowcount
