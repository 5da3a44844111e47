"""Writes for alignment runs: create, cancel, retry, and the task body that aligns pair after pair."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet

from alignment.aligning.scoring import PairScorer, SideSentences
from alignment.aligning.storing import AlignedOutcome, PendingWrites, store_block, store_blocked_pair
from alignment.copying import vector_cursor
from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Job, Pickup, error_text
from alignment.jobs.slices import TimeSlice, slice_check
from alignment.models import (
    AlignmentRun,
    Corpus,
    DocumentPair,
    Encoder,
    PairBlock,
    Sentence,
    SentenceEmbedding,
)
from alignment.signals import run_finished, run_succeeded
from models_ml.aligning.aligner_config import LEARNED, AlignerConfig
from models_ml.data.checkpoint import ALIGNER_FILES, CHECKSUMS, CLASSIFIER_FILES, read_json, sha256, verify_checksums
from models_ml.similarity.measures import MEASURE_BUILDERS, SimilarityMeasure

if TYPE_CHECKING:  # torch comes with the aligner, imported where a run aligns: a web process creating a run needs none
    from models_ml.aligning.aligner import Aligner

logger = logging.getLogger(__name__)

DEFAULT_MEASURES = ("embedding_cosine", "tfidf_cosine", "char3_tfidf_cosine", "jaccard")
TOP_K = 3
PAIR_CLASSIFIER_DIR = "pair_classifier"  # a model version's fine-tuned cross-encoder, beside the aligner's files


def alignment_config_build(
    *, aligner_config: dict | None = None, measures: Sequence[str] | None = None, model_dir: str = ""
) -> tuple[dict, str]:
    """The run config (validated) and its model version; ValueError naming the bad field or file."""
    cross_encoder_dir = ""
    saved = None
    if model_dir:
        directory = Path(model_dir)
        try:  # the same checks loading will make, so a broken model is refused before a run is queued
            verify_checksums(directory, ALIGNER_FILES, "aligner")
            saved = read_json(directory / "config.json")
        except ValueError as error:
            raise ValueError(f"model directory {model_dir}: {error}") from None
        asked = (aligner_config or {}).get("measure")
        if isinstance(saved, dict) and asked is not None and asked != saved.get("measure"):
            saved, model_dir = None, ""  # the model's CRF was trained on another measure: align untrained with the one asked for
    if saved is not None:
        aligner = AlignerConfig.from_dict({**saved, **(aligner_config or {})})
        version = f"{directory.resolve()} (sha256 {sha256(directory / CHECKSUMS)[:12]})"
        classifier = directory / PAIR_CLASSIFIER_DIR
        if classifier.is_dir():  # a model version with its fine-tuned cross-encoder: scored as the cross_encoder measure
            try:
                verify_checksums(classifier, CLASSIFIER_FILES, "pair-classifier")
            except ValueError as error:
                raise ValueError(f"model directory {model_dir}: {error}") from None
            cross_encoder_dir = str(classifier)
    else:
        aligner = AlignerConfig.from_dict(aligner_config or {})
        version = "untrained (hand-calibrated)"
        if aligner.measure == LEARNED:
            raise ValueError("measure: the learned pair scorer needs a trained model (ALIGNER_MODEL_DIR or a model version)")
    chosen = list(measures) if measures else list(DEFAULT_MEASURES)
    for name in chosen:
        if name not in MEASURE_BUILDERS and not (name == LEARNED == aligner.measure):
            raise ValueError(f"unknown similarity measure {name!r}; known measures: {', '.join(sorted(MEASURE_BUILDERS))}")
    if aligner.measure not in chosen:
        chosen.insert(0, aligner.measure)
    if cross_encoder_dir and "cross_encoder" not in chosen:
        chosen.append("cross_encoder")
    if "cross_encoder" in chosen and not (cross_encoder_dir or settings.CROSS_ENCODER_MODEL_DIR):
        raise ValueError(
            "the cross_encoder measure needs a fine-tuned pair classifier: set CROSS_ENCODER_MODEL_DIR "
            "(python -m models_ml train ... --pair-classifier-output DIR); an untrained head scores noise"
        )
    config = {"aligner": aligner.to_dict(), "measures": chosen, "model_dir": model_dir, "top_k": TOP_K}
    if cross_encoder_dir:
        config["cross_encoder_dir"] = cross_encoder_dir
    return config, version


ALIGN_TASK = "alignment.align_pairs"


def alignment_run_create(
    *,
    corpus: Corpus,
    pairs: Sequence[DocumentPair] | None = None,
    aligner_config: dict | None = None,
    measures: Sequence[str] | None = None,
    model_dir: str = "",
    created_by: AbstractBaseUser | None = None,
) -> AlignmentRun:
    """Queue a run over ``pairs`` (default: every pair of the corpus); ValueError on a bad config or scope."""
    config, version = alignment_config_build(aligner_config=aligner_config, measures=measures, model_dir=model_dir)
    scope = AlignmentRun.Scope.PAIRS if pairs is not None else AlignmentRun.Scope.CORPUS
    chosen = list(pairs) if pairs is not None else list(corpus.pairs.all())
    foreign = [pair.pk for pair in chosen if pair.corpus_id != corpus.pk]
    if foreign:
        raise ValueError(f"document pairs {foreign} do not belong to corpus {corpus.name!r}")
    if not chosen:
        raise ValueError(f"corpus {corpus.name!r} has no document pairs to align")
    with transaction.atomic():
        run = AlignmentRun.objects.create(
            corpus=corpus, scope=scope, config=config, model_version=version, pairs_total=len(chosen), created_by=created_by
        )
        run.pairs.set(chosen)
        enqueue_on_commit(ALIGN_TASK, run, run_id=run.pk)
    return run


def alignment_run_for_new_pairs(*, corpus: Corpus, created_by: AbstractBaseUser | None = None) -> AlignmentRun | None:
    """Queue a run over the pairs no run has covered yet (after an import), or None when there are none.

    Uses ALIGNER_MODEL_DIR when set. Pairs in a queued or running run count as covered.
    """
    covered = (
        AlignmentRun.objects.filter(corpus=corpus)
        .exclude(status__in=[AlignmentRun.Status.FAILED, AlignmentRun.Status.CANCELLED])
        .filter(pairs__isnull=False)
        .values("pairs")
    )  # no NULL in the NOT IN below
    pairs = list(corpus.pairs.exclude(aligned_pairs__isnull=False).exclude(pk__in=covered))
    if not pairs:
        return None
    return alignment_run_create(corpus=corpus, pairs=pairs, created_by=created_by, model_dir=settings.ALIGNER_MODEL_DIR)


def alignment_run_cancel(*, run: AlignmentRun) -> AlignmentRun:
    """A queued run is cancelled at once; a running one stops after the pair in flight (kept), or, in a huge pair
    aligned block by block, after the block in flight (its finished blocks are kept: a resume continues there).
    A run split into shards none of which is running (all wait for a worker) is cancelled at once too."""
    with transaction.atomic():
        locked = AlignmentRun.objects.select_for_update().get(pk=run.pk)
        idle_shards = locked.shards.exists() and not locked.shards.filter(status=AlignmentRun.Status.RUNNING).exists()
        if locked.status == AlignmentRun.Status.QUEUED or (locked.status == AlignmentRun.Status.RUNNING and idle_shards):
            locked.mark_cancelled()
            transaction.on_commit(lambda: run_finished.send(sender=AlignmentRun, run=locked))
        elif locked.status == AlignmentRun.Status.RUNNING:
            locked.cancel_requested = True
            locked.save(update_fields=["cancel_requested"])
    locked.refresh_from_db()
    return locked


def alignment_run_retry(*, run: AlignmentRun) -> AlignmentRun:
    """Queue a failed or cancelled run again; it skips the pairs it already stored."""
    if run.status not in (AlignmentRun.Status.FAILED, AlignmentRun.Status.CANCELLED):
        raise ValueError(f"only a failed or cancelled run can be resumed; run {run.pk} is {run.status}")
    with transaction.atomic():
        run.mark_queued(cancel_requested=False)
        enqueue_on_commit(ALIGN_TASK, run, run_id=run.pk)
    run.refresh_from_db()
    return run


def aligner_from_run_config(config: dict, *, device: str = "") -> Aligner:
    """The aligner a run describes: the saved model when it names one, else an untrained one.

    A saved model keeps its CRF shape; the run's other settings (thresholds, paragraph
    variant) apply on top of its trained weights.
    """
    from models_ml.aligning.aligner import Aligner

    settings = {**config["aligner"], **({"device": device} if device else {})}
    if not config.get("model_dir"):
        return Aligner(AlignerConfig.from_dict(settings))
    aligner = Aligner.load(config["model_dir"], device=device or None)
    aligner.config = AlignerConfig.from_dict({**settings, "crf": aligner.config.to_dict()["crf"]})
    return aligner


def side_sentences(document_id: int, encoder_name: str, *, vectors: bool = True) -> SideSentences:
    """One document's sentences in order, with stored vectors when every sentence has one (and ``vectors``)."""
    side = _side(list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", "text", "paragraph__index")))
    side.vectors = stored_vectors(side.ids, encoder_name) if vectors else None
    return side


def pair_sides(simple_id: int, complex_id: int) -> tuple[SideSentences, SideSentences]:
    """The two documents' sentences as :func:`side_sentences` reads them (no vectors), in one query."""
    rows = Sentence.objects.filter(document_id__in=[simple_id, complex_id]).order_by("index")
    by_document: dict[int, list[tuple[int, str, int]]] = {simple_id: [], complex_id: []}
    for document_id, pk, text, paragraph in rows.values_list("document_id", "pk", "text", "paragraph__index"):
        by_document[document_id].append((pk, text, paragraph))
    return _side(by_document[simple_id]), _side(by_document[complex_id])


def _side(rows: list[tuple[int, str, int]]) -> SideSentences:
    paragraph_numbers = sorted({paragraph for _, _, paragraph in rows})
    dense = {number: position for position, number in enumerate(paragraph_numbers)}  # paragraphs without sentences are skipped
    return SideSentences(ids=[pk for pk, _, _ in rows], texts=[text for _, text, _ in rows], paragraphs=[dense[p] for _, _, p in rows])


def stored_vectors(ids: Sequence[int], encoder_name: str) -> np.ndarray | None:
    """The (len(ids), d) stored vectors of these sentences, in order; None unless every one has a vector."""
    if not ids:
        return None
    with vector_cursor() as cursor:
        cursor.execute(STORED_VECTORS_SQL, [encoder_name, list(ids)], binary=True)
        stored = dict(cursor.fetchall())
    if len(stored) != len(ids):
        return None
    return np.stack([stored[pk].to_numpy() for pk in ids]).astype(np.float32, copy=False)  # (count, d)


STORED_VECTORS_SQL = (
    f"SELECT e.sentence_id, e.vector FROM {SentenceEmbedding._meta.db_table} e JOIN {Encoder._meta.db_table} c ON c.id = e.encoder_id "
    "WHERE c.name = %s AND e.sentence_id = ANY(%s)"
)


def alignment_run_execute(
    *, run_id: int, build_measure: Callable[[str, Aligner], SimilarityMeasure], device: str = "", time_slice: TimeSlice | None = None
) -> AlignmentRun:
    """Align every pair of the run that has no stored result yet, one committed pair at a time.

    Any error marks the run failed with the message and re-raises; running it again
    continues with the pairs not yet stored. A cancel request stops it between pairs.
    More than ALIGN_SHARD_PAIRS pending pairs are split into shards, each its own task (shards.py).
    Found "running" (its worker died) it resumes, or fails after JOB_MAX_ATTEMPTS (Job.pickup).
    ``time_slice`` (in a worker): between pairs, once it has run out, the run gives its worker
    to other jobs and continues later (alignment/jobs/slices.py).
    """
    run = AlignmentRun.objects.get(pk=run_id)
    pickup = run.pickup()
    if pickup is Pickup.SKIP:
        return run
    if pickup is Pickup.GAVE_UP:
        run_finished.send(sender=AlignmentRun, run=run)
        return run
    try:
        pending = run.pairs.exclude(aligned_pairs__run_id=run_id).order_by("pk")
        if run.shards.exists() or pending.count() > settings.ALIGN_SHARD_PAIRS:
            from alignment.aligning.shards import shards_start

            return shards_start(run, list(pending.values_list("pk", flat=True)))
        if not align_pending(run, run, pending, run_scorer(run, build_measure, device), time_slice):
            run.mark_cancelled()
            run_finished.send(sender=AlignmentRun, run=run)
            return run
    except Exception as exc:
        if not database_lost(exc):  # a lost database leaves the run running: the task's retry resumes it
            run.mark_failed(error_text(exc))
            run_finished.send(sender=AlignmentRun, run=AlignmentRun.objects.get(pk=run_id))
        raise
    return run_finish(run)


def run_finish(run: AlignmentRun) -> AlignmentRun:
    """Mark the run succeeded and tell the listeners, once: only the call whose transition wins sends the signals."""
    won = run.mark_succeeded()
    finished = AlignmentRun.objects.get(pk=run.pk)
    if won:
        run_succeeded.send(sender=AlignmentRun, run=finished)
        run_finished.send(sender=AlignmentRun, run=finished)
    return finished


STOPPED = "stopped"  # what aligning a pair answers when the run was cancelled halfway through it


def run_stopped(run_id: int) -> bool:
    """Whether the run's work should stop: a cancel was asked for, or it is no longer running (a shard of it failed)."""
    return AlignmentRun.objects.filter(pk=run_id).exclude(status=AlignmentRun.Status.RUNNING, cancel_requested=False).exists()


def run_scorer(run: AlignmentRun, build_measure: Callable[..., SimilarityMeasure], device: str) -> PairScorer:
    """The run's aligner and measures, ready to score pairs."""
    aligner = aligner_from_run_config(run.config, device=device)
    options = {"cross_encoder_dir": run.config["cross_encoder_dir"]} if run.config.get("cross_encoder_dir") else {}
    return PairScorer(aligner, run.measures, lambda name: build_measure(name, aligner, **options), top_k=run.config.get("top_k", TOP_K))


def align_pending(run: AlignmentRun, job: Job, pending: QuerySet[DocumentPair], scorer: PairScorer, time_slice: TimeSlice | None) -> bool:
    """Align and store ``pending`` pair after pair, beating ``job``'s heartbeat (the run's or a shard's); False when stopped.

    Pairs are stored a few at a time (:class:`PendingWrites`); a stop, the end of the time slice or a pair that
    fails stores what was aligned before it first.
    """
    writes = PendingWrites(run.pk)
    for pair in pending.iterator(chunk_size=100):
        try:
            stopped = run_stopped(run.pk) or _align_one(run, job, pair, scorer, time_slice, writes) is STOPPED
        except Exception as exc:
            if not database_lost(exc):
                writes.store()  # the pairs before the one that failed are kept: a retry aligns only the rest
            raise
        if stopped:
            writes.store()
            return False
        if writes.due() or (time_slice is not None and time_slice.over()):
            writes.store()
        job.heartbeat()
        slice_check(time_slice)
    writes.store()
    return True


def _align_one(
    run: AlignmentRun, job: Job, pair: DocumentPair, scorer: PairScorer, time_slice: TimeSlice | None, writes: PendingWrites
) -> str:
    """Align one pair into ``writes``, or block by block past ``ALIGN_BLOCK_MIN_CELLS`` (STOPPED when cancelled meanwhile)."""
    started = time.perf_counter()
    encoder_name = scorer.aligner.config.encoder
    simple, complex_side = pair_sides(pair.simple_document_id, pair.complex_document_id)
    if len(simple.ids) * len(complex_side.ids) > settings.ALIGN_BLOCK_MIN_CELLS:
        writes.store()  # the pairs before it first, so that the run's counters keep its order
        return _align_blocked(run, job, pair, scorer, time_slice, simple, complex_side)
    both = stored_vectors(simple.ids + complex_side.ids, encoder_name)  # one round trip for the two documents
    if both is not None:
        simple.vectors, complex_side.vectors = both[: len(simple.ids)], both[len(simple.ids) :]
    outcome = scorer.score(simple, complex_side)
    writes.add(AlignedOutcome(pair, simple, complex_side, outcome, time.perf_counter() - started))
    return "done"


def _align_blocked(
    run: AlignmentRun,
    job: Job,
    pair: DocumentPair,
    scorer: PairScorer,
    time_slice: TimeSlice | None,
    simple: SideSentences,
    complex_side: SideSentences,
) -> str:
    """A huge pair in blocks (:mod:`models_ml.aligning.blockwise`): planned once, then one committed block at a time.

    Between blocks it stops when the run is cancelled (STOPPED) and gives the worker back when the time slice
    has run out (SliceOver); either way the blocks done stay, and the run continues at the first one not done.
    Memory: both documents' texts and ids, and one block's sentences, vectors and matrices.
    """
    from models_ml.aligning.blockwise import Block, dense_positions, plan_blocks, rows_for_span

    encoder_name = scorer.aligner.config.encoder

    if not PairBlock.objects.filter(run_id=run.pk, pair=pair).exists():
        try:
            rows = rows_for_span(settings.ALIGN_BLOCK_ROWS, scorer.aligner.config.crf.max_span)  # equal CRF cost per block
            plan = plan_blocks(
                simple.texts, complex_side.texts, block_rows=rows, max_cols=settings.ALIGN_BLOCK_MAX_COLS,
                should_stop=lambda: run_stopped(run.pk),
            )  # fmt: skip
        except InterruptedError:
            return STOPPED
        PairBlock.objects.bulk_create(
            [PairBlock(run_id=run.pk, pair=pair, index=i, rows=list(b.rows), cols=[list(c) for c in b.cols]) for i, b in enumerate(plan)],
            ignore_conflicts=True,  # a second worker on the same run planned it first: the same plan
        )
    for block_id in PairBlock.objects.filter(run_id=run.pk, pair=pair, done=False).order_by("index").values_list("pk", flat=True):
        block = PairBlock.objects.get(pk=block_id)
        started = time.perf_counter()
        rows = list(range(*block.rows))
        cols = Block.from_json([block.rows, block.cols]).columns().tolist()
        sides = []
        for side, positions in ((simple, rows), (complex_side, cols)):
            ids = [side.ids[k] for k in positions]
            paragraphs = [side.paragraphs[k] for k in positions]
            local = SideSentences(ids, [side.texts[k] for k in positions], dense_positions(paragraphs), stored_vectors(ids, encoder_name))
            sides.append((local, sorted(set(paragraphs))))
        (block_simple, simple_paragraphs), (block_complex, complex_paragraphs) = sides
        outcome = scorer.score(block_simple, block_complex)
        with transaction.atomic():
            store_block(run.pk, pair, block, outcome, (block_simple, simple_paragraphs), (block_complex, complex_paragraphs), cols, started)
        job.heartbeat()
        if run_stopped(run.pk):
            return STOPPED
        slice_check(time_slice)
    with transaction.atomic():
        store_blocked_pair(run.pk, pair, len(simple.ids), len(complex_side.ids))
    return "done"
