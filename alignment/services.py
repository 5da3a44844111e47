"""Writes for corpora, pairs, encoders and embedding runs. Views, commands and tasks call these.

Each service validates, writes inside a transaction and enqueues background
work only once that transaction has committed, so a worker never sees a job
whose rows are not there yet.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from alignment.copying import vector_cursor
from alignment.errors import ServiceError
from alignment.importing.language import language_codes
from alignment.index_loading import index_abandoned, index_drop, index_make_room, indexed_rows
from alignment.index_memory import build_memory, index_build_memory_mb
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Job, Pickup
from alignment.jobs.slices import TimeSlice, slice_check
from alignment.jobs.statements import statement_stopped_when
from alignment.levels import level_pairs, scheme_sort_key
from alignment.models import Corpus, Document, DocumentPair, EmbeddingRun, Encoder, Sentence, SentenceEmbedding
from models_ml.similarity.encoders import SentenceEncoder

logger = logging.getLogger(__name__)


def corpus_settings_check(*, language: str, pairing: str) -> None:
    """ValueError naming the setting when a new corpus's language or pairing is not valid."""
    if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z]{2,4})?", language):
        raise ServiceError(f"language {language!r} is not an ISO 639 code such as 'en' or 'de'", field="language")
    if pairing not in Corpus.Pairing.values:
        raise ServiceError(f"pairing {pairing!r} must be one of {', '.join(Corpus.Pairing.values)}", field="pairing")


def corpus_get_or_create(
    *,
    name: str,
    language: str,
    owner: AbstractBaseUser,
    description: str = "",
    pairing: str = Corpus.Pairing.ALL,
    level_order: list[str] | None = None,
    is_shared: bool = False,
    metadata: dict | None = None,
) -> tuple[Corpus, bool]:
    """The corpus called ``name``, created with these settings if it does not exist yet.

    An existing corpus keeps its settings, except that a different language is
    refused: sentence splitting and encoders depend on it.
    """
    corpus_settings_check(language=language, pairing=pairing)
    corpus, created = Corpus.objects.get_or_create(
        name=name,
        defaults={
            "language": language,
            "owner": owner,
            "description": description,
            "pairing": pairing,
            "level_order": level_order or [],
            "is_shared": is_shared,
            "metadata": metadata or {},
        },
    )
    if not created and corpus.language != language:
        raise ValueError(f"corpus {name!r} exists with language {corpus.language!r}, not {language!r}")
    return corpus, created


def corpus_language_set(*, corpus: Corpus, language: str) -> Corpus:
    """Give the corpus another language: an ISO 639 code the language detector knows, or "und" (undetermined).

    For a detection that was unsure or wrong. ServiceError on ``language``, nothing changed, for any other
    value. Documents already imported keep their sentences; later imports split with the new language.
    """
    code = language.strip().lower()
    if code not in language_codes():
        raise ServiceError(
            f"language {language!r} is not an ISO 639 code this app knows, such as 'en', 'de' or 'und' (undetermined)", field="language"
        )
    corpus.language = code
    corpus.save(update_fields=["language"])
    return corpus


def level_sort_key(corpus: Corpus) -> Callable[[str], tuple]:
    """Sort key putting the most complex level first: ``corpus.level_order`` when it names the level, else the
    known schemes (:mod:`alignment.levels`). An import stores the order whenever this key alone would not give it."""
    explicit = {level: i for i, level in enumerate(corpus.level_order or [])}

    def key(level: str) -> tuple:
        if level in explicit:
            return (0, explicit[level])
        return (1, scheme_sort_key(level))

    return key


@transaction.atomic
def document_pairs_sync(*, corpus: Corpus) -> int:
    """Make the corpus's pairs exactly the complex→simple pairs its pairing asks for. Returns how many were created.

    ``Corpus.pairing`` chooses every pair of levels (adv→int, adv→ele, int→ele)
    or adjacent levels only (adv→int, int→ele). When a middle level arrives in
    a later import, the adjacent pairing's old adv→ele pair is removed.
    """
    by_article: dict[str, list[Document]] = defaultdict(list)
    for document in Document.objects.filter(corpus=corpus).only("id", "external_id", "level"):
        by_article[document.external_id].append(document)
    key = level_sort_key(corpus)
    wanted: set[tuple[int, int]] = set()
    for documents in by_article.values():
        documents.sort(key=lambda d: key(d.level))
        combos = level_pairs(documents, adjacent=corpus.pairing == Corpus.Pairing.ADJACENT)
        wanted.update((c.pk, s.pk) for c, s in combos)
    levels = DocumentPair.objects.filter(corpus=corpus, origin=DocumentPair.Origin.PAIRING)  # mined pairs are not the pairing's
    existing = set(levels.values_list("complex_document_id", "simple_document_id"))
    stale = existing - wanted
    if stale:
        stale_filter = Q()
        for complex_id, simple_id in stale:
            stale_filter |= Q(complex_document_id=complex_id, simple_document_id=simple_id)
        levels.filter(stale_filter).delete()
    DocumentPair.objects.bulk_create(
        [DocumentPair(corpus=corpus, complex_document_id=c, simple_document_id=s) for c, s in sorted(wanted - existing)],
        ignore_conflicts=True,  # a mined pair may already join the same two documents
    )
    return len(wanted - existing)


def encoder_get_or_create(*, name: str, dimensions: int) -> Encoder:
    """The Encoder row for ``name``; refuses a model whose dimension differs from the registered one."""
    encoder, _ = Encoder.objects.get_or_create(name=name, defaults={"dimensions": dimensions})
    if encoder.dimensions != dimensions:
        raise ValueError(f"encoder {name!r} is registered with {encoder.dimensions} dimensions, the model gives {dimensions}")
    return encoder


class RunStopped(Exception):
    """The embedding run was cancelled (or failed in another shard) while this worker embedded or indexed for it."""


def encoder_index_ensure(*, encoder: Encoder, run: EmbeddingRun | None = None) -> bool:
    """Create the encoder's partial HNSW (cosine) index if it is missing. Returns True if it was built now.

    ``run``: the embedding run that builds it; the build (minutes at millions of vectors) stops within seconds
    once that run is no longer running (cancelled), raising :class:`RunStopped`, and a later build starts afresh
    (a cancelled ``CONCURRENTLY`` build leaves an invalid index behind, dropped first).

    The index casts the dimension-less column to this encoder's dimension and
    covers only this encoder's rows; nearest-neighbour queries use the same
    expression and filter (see :func:`alignment.selectors.sentence_nearest`).
    The embedding job calls this *after* its first load: building HNSW over
    stored vectors is far cheaper than inserting them one by one into the
    graph (the bench measured the job 20% slower with the index in place).
    """
    if _index_valid(encoder.index_name):
        return False
    with _build_turn(encoder.index_name, run):  # one build of the index at a time, whichever run or host asks
        if _index_valid(encoder.index_name):
            return False  # another run built it while this one waited for its turn
        _index_build(encoder, run)
    return True


def encoder_index_make_room(*, encoder: Encoder, adding: int, run: EmbeddingRun | None = None) -> bool:
    """Before a run stores ``adding`` vectors: drop the encoder's index when they are a large share of what it holds
    (:func:`alignment.index_loading.index_make_room`; the run's end builds it again, :func:`encoder_index_ensure`),
    in the build's turn, so that no other run's build is dropped half-way; ``DROP INDEX CONCURRENTLY`` waits for every
    transaction that reads the table, so it is cancelled once the run stops, as a build is (an index left invalid is
    dropped and built at the run's next end). True when it was dropped."""
    if adding <= 0 or indexed_rows(encoder.index_name) is None:
        return False
    with _build_turn(encoder.index_name, run), _stopped_when_run_stops(run):
        return index_make_room(encoder.index_name, adding)


def _index_build(encoder: Encoder, run: EmbeddingRun | None) -> None:
    # CONCURRENTLY does not block writers of other encoders' vectors, but
    # cannot run inside a transaction block (as in tests); then build it plainly.
    concurrently = "" if connection.in_atomic_block else "CONCURRENTLY"
    needed_mb = index_build_memory_mb(SentenceEmbedding.objects.filter(encoder=encoder).count(), int(encoder.dimensions))
    with connection.cursor() as cursor, build_memory(cursor, needed_mb), _stopped_when_run_stops(run):
        if index_abandoned(encoder.index_name):  # a cancelled CONCURRENTLY build's invalid index: never used, never rebuilt
            index_drop(encoder.index_name)  # CONCURRENTLY waits for every reader of the table, as the build does: under the cancel
        cursor.execute(
            f"CREATE INDEX {concurrently} IF NOT EXISTS {encoder.index_name} ON {SentenceEmbedding._meta.db_table} "
            f"USING hnsw ((vector::vector({int(encoder.dimensions)})) vector_cosine_ops) WHERE encoder_id = {int(encoder.pk)}"
        )


INDEX_LOCKS = 4201  # the first key of the session advisory locks that give an index build its turn (the second: its name's hash)
INDEX_TURN_POLL_SECONDS = 1.0


@contextmanager
def _build_turn(name: str, run: EmbeddingRun | None) -> Iterator[None]:
    """The turn to build index ``name``: a session advisory lock, asked for every second until it is free, ``run``'s cancel
    looked for between (:class:`RunStopped`). Two runs of one encoder ending together each issued ``CREATE INDEX
    CONCURRENTLY``, and the second failed ("tuple concurrently updated") or returned with the index still invalid,
    the first build still running (both seen in tests/alignment/test_embedding_cancel.py). A blocking
    ``pg_advisory_lock`` would hold a snapshot, which a ``CONCURRENTLY`` build waits for; a short try does not."""
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [INDEX_LOCKS, name])
            if cursor.fetchone()[0]:
                break
            if run is not None and _run_stopped(run):
                raise RunStopped(f"embedding run {run.pk} stopped while another run built its encoder's index")
            time.sleep(INDEX_TURN_POLL_SECONDS)
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [INDEX_LOCKS, name])
        except DatabaseError:  # the connection is gone (and its lock with it) or its transaction failed: nothing to free here
            pass


def _index_valid(name: str) -> bool:
    """The index exists and is usable (a ``CREATE INDEX CONCURRENTLY`` that was cancelled leaves an invalid one)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s", [name])
        row = cursor.fetchone()
        return bool(row and row[0])


def _stopped_when_run_stops(run: EmbeddingRun | None):
    """The index build's statement, cancelled within seconds once ``run`` is no longer running (None: never)."""
    if run is None:
        return nullcontext()
    return statement_stopped_when(lambda: _run_stopped(run), lambda: RunStopped(f"embedding run {run.pk} stopped during its index build"))


def _run_stopped(run: EmbeddingRun) -> bool:
    """The run is no longer running (cancelled, or failed in another shard): what its index build and its wait look for."""
    return not EmbeddingRun.objects.filter(pk=run.pk, status=EmbeddingRun.Status.RUNNING).exists()


EMBED_TASK = "alignment.embed_corpus"


def embedding_run_create(*, corpus: Corpus, encoder_name: str, created_by: AbstractBaseUser | None = None) -> EmbeddingRun:
    """Queue embedding of every sentence of ``corpus`` that has no vector from ``encoder_name`` yet.

    If a run for the same corpus and encoder is already queued or running, that
    run is returned instead of starting a second one.
    """
    with transaction.atomic():
        Corpus.objects.select_for_update().get(pk=corpus.pk)  # serialise concurrent requests per corpus
        active = EmbeddingRun.objects.filter(
            corpus=corpus, encoder_name=encoder_name, status__in=[EmbeddingRun.Status.QUEUED, EmbeddingRun.Status.RUNNING]
        ).first()
        if active is not None:
            return active
        run = EmbeddingRun.objects.create(corpus=corpus, encoder_name=encoder_name, created_by=created_by)
        enqueue_on_commit(EMBED_TASK, run, run_id=run.pk)
    return run


def embedding_run_retry(*, run: EmbeddingRun) -> EmbeddingRun:
    """Queue a failed or cancelled run again; it continues from the batches that were already stored."""
    if run.status not in (EmbeddingRun.Status.FAILED, EmbeddingRun.Status.CANCELLED):
        raise ValueError(f"only a failed or cancelled run can be retried; run {run.pk} is {run.status}")
    with transaction.atomic():
        run.mark_queued()
        enqueue_on_commit(EMBED_TASK, run, run_id=run.pk)
    run.refresh_from_db()
    return run


def embedding_run_cancel(*, run: EmbeddingRun) -> EmbeddingRun:
    """Cancel a queued or running run at once, with its shards not done: a worker embedding for it stops after the
    batch in flight (its vectors kept, as every batch before), an index build within seconds. A retry continues."""
    with transaction.atomic():
        locked = EmbeddingRun.objects.select_for_update().get(pk=run.pk)
        if locked.mark_cancelled():
            for shard in locked.shards.filter(status__in=[EmbeddingRun.Status.QUEUED, EmbeddingRun.Status.RUNNING]):
                shard.mark_cancelled()
    locked.refresh_from_db()
    return locked


def sentences_missing_embedding(*, corpus: Corpus, encoder: Encoder | None):
    """Sentences of ``corpus`` that have no vector from ``encoder`` (None: not registered yet, so every one), in id order."""
    if encoder is None:
        return Sentence.objects.filter(document__corpus=corpus).order_by("pk")
    has_vector = SentenceEmbedding.objects.filter(sentence=OuterRef("pk"), encoder=encoder)
    return Sentence.objects.filter(document__corpus=corpus).filter(~Exists(has_vector)).order_by("pk")


EMBEDDING_WINDOW_BATCHES = 16


_VECTOR_INSERT_SQL = (
    f"INSERT INTO {SentenceEmbedding._meta.db_table} (sentence_id, encoder_id, vector, created_at) "
    "VALUES (%s, %s, %b, now()) ON CONFLICT (sentence_id, encoder_id) DO NOTHING"
)


def _vectors_insert(encoder_id: int, sentence_ids: list[int], vectors: np.ndarray) -> None:
    """Insert vectors in pgvector's binary format, skipping sentences that already have one.

    The ORM sends vectors as text ("[0.1,0.2,...]"), formatting 384 floats per
    row in Python; the binary path is about 4x faster (bench: 0.12 vs 0.49 ms
    a row), which is most of the job's time outside the encoder.
    """
    with vector_cursor() as cursor:
        cursor.executemany(_VECTOR_INSERT_SQL, [(pk, encoder_id, v) for pk, v in zip(sentence_ids, vectors)])


def _embed_batch(
    run: EmbeddingRun, encoder: SentenceEncoder, encoder_row: Encoder, batch: list[tuple[int, str]], encode_batch_size: int
) -> bool:
    """Encode one batch and store its vectors and the run's progress (the heartbeat) in one transaction; False once the
    run is no longer running (cancelled, or failed in another shard): the batch's vectors are kept, and the caller stops."""
    vectors = encoder.encode([text for _, text in batch], batch_size=encode_batch_size)  # (len(batch), dim)
    with transaction.atomic():
        _vectors_insert(encoder_row.pk, [pk for pk, _ in batch], vectors)
        return run.heartbeat(embedded_sentences=F("embedded_sentences") + len(batch), batches_done=F("batches_done") + 1)


def embed_missing(
    run: EmbeddingRun, job: Job, encoder: SentenceEncoder, encoder_row: Encoder, missing: QuerySet[Sentence],
    batch_size: int, encode_batch_size: int, time_slice: TimeSlice | None,
) -> None:  # fmt: skip
    """Embed ``missing`` batch after batch, each committed with the run's progress; ``job`` (the run or a shard) beats.
    Raises :class:`RunStopped` after the batch in flight once the run is no longer running (a cancel)."""
    last_id = 0
    while True:
        # Read a window of missing sentences in id order (keyset, memory-bounded), then
        # encode it in batches of similar length: a transformer pads every sentence
        # of a batch to the longest one, so mixing lengths wastes most of the work.
        window = list(missing.filter(pk__gt=last_id).values_list("pk", "text")[: batch_size * EMBEDDING_WINDOW_BATCHES])
        if not window:
            return
        last_id = window[-1][0]
        window.sort(key=lambda row: len(row[1]))
        for start in range(0, len(window), batch_size):
            if not _embed_batch(run, encoder, encoder_row, window[start : start + batch_size], encode_batch_size):
                raise RunStopped(f"embedding run {run.pk} is {EmbeddingRun.objects.get(pk=run.pk).status}")
            if job is not run:
                job.heartbeat()
            slice_check(time_slice)


def embedding_run_execute(
    *, run_id: int, load_encoder: Callable[[str], SentenceEncoder], batch_size: int, encode_batch_size: int = 32,
    time_slice: TimeSlice | None = None,
) -> EmbeddingRun:  # fmt: skip
    """Embed the missing sentences of the run's corpus, one committed batch at a time.

    ``batch_size`` sentences are stored per transaction; the encoder runs on
    ``encode_batch_size`` at a time (small batches are fastest on CPU: attention
    memory grows with batch x length², and allocating it costs more than it saves).

    Each batch's vectors and the run's progress are written in one
    transaction, so progress never counts a vector that is not stored. Any
    error marks the run failed with the message and re-raises. Found "running" (its
    worker died) it resumes from the stored vectors, or fails after JOB_MAX_ATTEMPTS.
    ``time_slice`` (in a worker): between batches, once it has run out, the run gives its
    worker to other jobs and continues later (alignment/jobs/slices.py). More than
    EMBEDDING_SHARD_SENTENCES missing sentences are split into shards, each its own task
    (alignment/embedding_shards.py).
    """
    run = EmbeddingRun.objects.select_related("corpus").get(pk=run_id)
    pickup = run.pickup()
    if pickup in (Pickup.SKIP, Pickup.GAVE_UP):
        return run
    try:
        # Counted before the encoder loads (seconds, once per worker process): a run split into shards
        # never encodes here, so its shards start while this worker would still be loading the model.
        encoder_row = Encoder.objects.filter(name=run.encoder_name).first()  # None: nothing embedded by it yet
        total = Sentence.objects.filter(document__corpus=run.corpus).count()
        stored = (
            0
            if encoder_row is None
            else SentenceEmbedding.objects.filter(sentence__document__corpus=run.corpus, encoder=encoder_row).count()
        )
        # A continuation keeps what its first slice found stored; a (re)start counts what is there now.
        already = {} if pickup is Pickup.CONTINUE else {"already_embedded": stored}
        run.heartbeat(total_sentences=total, embedded_sentences=stored, **already)
        if encoder_row is not None and pickup is not Pickup.CONTINUE and not run.shards.exists():
            encoder_index_make_room(encoder=encoder_row, adding=total - stored, run=run)  # a large load: built again at its end
        if run.shards.exists() or total - stored > settings.EMBEDDING_SHARD_SENTENCES:
            from alignment.embedding_shards import embedding_shards_start

            return embedding_shards_start(run, sentences_missing_embedding(corpus=run.corpus, encoder=encoder_row))
        encoder = load_encoder(run.encoder_name)
        encoder_row = encoder_get_or_create(name=run.encoder_name, dimensions=encoder.dimensions)
        missing = sentences_missing_embedding(corpus=run.corpus, encoder=encoder_row)
        embed_missing(run, run, encoder, encoder_row, missing, batch_size, encode_batch_size, time_slice)
        run.wake_alignment()  # every vector is stored: waiting alignment goes on during the index build
        encoder_index_ensure(encoder=encoder_row, run=run)
    except RunStopped:  # cancelled: what was stored stays, the worker is free
        return EmbeddingRun.objects.get(pk=run.pk)
    except Exception as exc:
        run.mark_failed_by(exc)
        raise
    run.mark_succeeded()
    run.refresh_from_db()
    return run
