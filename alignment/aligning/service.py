"""Writes for alignment runs: create, cancel, retry, and the task body that aligns pair after pair."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet

from alignment.aligning.embedding_wait import wait_for_embedding
from alignment.aligning.pipeline import read_ahead
from alignment.aligning.reading import PairRead, pair_sides, stored_vectors
from alignment.aligning.scoring import NonFiniteScores, PairOutcome, PairScorer, SideSentences
from alignment.aligning.storing import AlignedOutcome, PendingWrites, store_block, store_blocked_pair
from alignment.jobs.database import database_lost
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.helper_io import RunIO
from alignment.jobs.models import Job, Pickup, error_text
from alignment.jobs.slices import SliceOver, TimeSlice, slice_check
from alignment.models import (
    AlignmentRun,
    Corpus,
    DocumentPair,
    PairBlock,
)
from alignment.signals import run_finished, run_succeeded
from models_ml.aligning.aligner_config import LEARNED, AlignerConfig
from models_ml.data.checkpoint import ALIGNER_FILES, CHECKSUMS, CLASSIFIER_FILES, read_json, sha256, verify_checksums
from models_ml.similarity.measures import MEASURE_BUILDERS, SimilarityMeasure

if TYPE_CHECKING:  # torch comes with the aligner, imported where a run aligns: a web process creating a run needs none
    from models_ml.aligning.aligner import Aligner

logger = logging.getLogger(__name__)

# The measures a run stores beside the CRF's own when none are asked for: the two the learned scorer costs nothing
# more for (the cosine of the stored vectors, and the character 3-grams its features are built on). Word TF-IDF and
# Jaccard, the default before, took 15 % of a run's time on top (docs/benchmarks.md, "Corpus scale"); a run asks for them.
DEFAULT_MEASURES = ("embedding_cosine", "char3_tfidf_cosine")
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
    """A queued run is cancelled at once; a running one stops within STOP_CHECK_SECONDS, after the pair in flight (kept
    with those before it), or, in a huge pair aligned block by block, after the block in flight (its finished blocks
    are kept: a resume continues there).
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


def alignment_run_execute(
    *, run_id: int, build_measure: Callable[[str, Aligner], SimilarityMeasure], device: str = "", time_slice: TimeSlice | None = None
) -> AlignmentRun:
    """Align every pair of the run that has no stored result yet, one committed pair at a time.

    Any error marks the run failed with the message and re-raises; running it again
    continues with the pairs not yet stored. A cancel request stops it between pairs (looked for every STOP_CHECK_SECONDS).
    More than ALIGN_SHARD_PAIRS pending pairs are split into shards, each its own task (shards.py).
    Found "running" (its worker died) it resumes, or fails after JOB_MAX_ATTEMPTS (Job.pickup).
    ``time_slice`` (in a worker): between pairs, once it has run out, the run gives its worker
    to other jobs and continues later (alignment/jobs/slices.py). While the corpus's embedding run is still to store
    its pairs' vectors, it waits for that run instead of encoding them itself (embedding_wait.py).
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
        scorer = run_scorer(run, build_measure, device)
        wait_for_embedding(run, scorer, list(pending.values_list("pk", flat=True)), time_slice)
        if not align_pending(run, run, pending, scorer, time_slice):
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
    """Mark the run succeeded and tell the listeners, once: only the call whose transition wins sends the signals. A
    wait for the corpus's embedding that its shards recorded is forgotten (embedding_wait.py)."""
    won = run.mark_succeeded(waiting_for=None)
    finished = AlignmentRun.objects.get(pk=run.pk)
    if won:
        run_succeeded.send(sender=AlignmentRun, run=finished)
        run_finished.send(sender=AlignmentRun, run=finished)
    return finished


STOPPED = "stopped"  # what aligning a pair answers when the run was cancelled halfway through it
# Between pairs a run looks for a cancel and beats its heartbeat at most this often: each was a round trip per
# pair, 3.4 ms of a short pair's 50 (docs/benchmarks.md, "Corpus scale"). A cancel still stops it within a second.
STOP_CHECK_SECONDS = 0.5


def run_stopped(run_id: int) -> bool:
    """Whether the run's work should stop: a cancel was asked for, or it is no longer running (a shard of it failed)."""
    return AlignmentRun.objects.filter(pk=run_id).exclude(status=AlignmentRun.Status.RUNNING, cancel_requested=False).exists()


_scorers = threading.local()  # the last scorer built on each thread, with what it was built from


def run_scorer(run: AlignmentRun, build_measure: Callable[..., SimilarityMeasure], device: str) -> PairScorer:
    """The run's aligner and measures, ready to score pairs: the one built last on this thread when it was built from
    the same things (the run's config and measures, the device, the model folder's files as they are now).

    A worker's shards of one run (50 pairs each) built it again each: the model loaded, its measures set up, 57 ms a
    shard, 1.2 s of a 1,000-pair run's 30 (docs/benchmarks.md, "Corpus scale"). A scorer holds nothing of a pair
    between pairs, so shards and runs alike share it; a model changed in place (another size or time) is loaded again.
    """
    model_dir, cross_dir = run.config.get("model_dir") or "", run.config.get("cross_encoder_dir") or ""
    key = (
        json.dumps(run.config, sort_keys=True),
        tuple(run.measures),
        device,
        build_measure,
        _files_stamp(model_dir),
        _files_stamp(cross_dir),
        settings._wrapped,  # what the measures read the encoder's settings from (overridden in a test: another object)
    )
    built = getattr(_scorers, "built", None)
    if built is not None and built[0] == key:
        return built[1]
    aligner = aligner_from_run_config(run.config, device=device)
    options = {"cross_encoder_dir": cross_dir} if cross_dir else {}
    scorer = PairScorer(aligner, run.measures, lambda name: build_measure(name, aligner, **options), top_k=run.config.get("top_k", TOP_K))
    _scorers.built = (key, scorer)
    return scorer


def _files_stamp(folder: str) -> tuple:
    """Each file under ``folder`` with its size and modification time (a few stat calls): what a change in place alters."""
    if not folder:
        return ()
    root = Path(folder)
    return tuple(
        sorted((str(path.relative_to(root)), path.stat().st_size, path.stat().st_mtime_ns) for path in root.rglob("*") if path.is_file())
    )


def align_pending(run: AlignmentRun, job: Job, pending: QuerySet[DocumentPair], scorer: PairScorer, time_slice: TimeSlice | None) -> bool:
    """Align and store ``pending`` pair after pair, beating ``job``'s heartbeat (the run's or a shard's); False when stopped.

    The pairs are read ahead and stored a few at a time on a helper thread while this one scores
    (:mod:`alignment.aligning.pipeline`, :class:`PendingWrites`); a stop, the end of the time slice or a pair that
    fails stores what was aligned before it first, and waits until it is stored.
    """
    io = RunIO()
    writes = PendingWrites(run.pk, io)
    looked = -STOP_CHECK_SECONDS  # when it last looked for a cancel (monotonic)
    try:
        for pair, read in read_ahead(pending, scorer.aligner.config.encoder, io):
            now = time.monotonic()
            due, looked = (True, now) if now - looked >= STOP_CHECK_SECONDS else (False, looked)
            if (due and run_stopped(run.pk)) or _align_one(run, job, pair, read, scorer, time_slice, writes) is STOPPED:
                writes.flush()
                return False
            over = time_slice is not None and time_slice.over()  # read once: the store below and the give-back agree
            if writes.due() or over:
                writes.store()
            io.later(job.heartbeat, every=STOP_CHECK_SECONDS, step_delay=False)  # written behind the batch being stored
            job.step_delay()
            if over:
                writes.flush()  # stored before the worker is given back
                raise SliceOver
        writes.flush()
    except Exception as exc:
        if not database_lost(exc):
            writes.flush()  # the pairs before the one that failed are kept: a retry aligns only the rest
        raise
    finally:
        io.close()
    return True


def _align_one(
    run: AlignmentRun,
    job: Job,
    pair: DocumentPair,
    read: PairRead | None,
    scorer: PairScorer,
    time_slice: TimeSlice | None,
    writes: PendingWrites,
) -> str:
    """Score one pair read whole into ``writes``; a huge one (``read`` None) block by block (STOPPED when cancelled meanwhile)."""
    if read is None:
        writes.flush()  # the pairs before it first, so that the run's counters keep its order
        simple, complex_side = pair_sides(pair.simple_document_id, pair.complex_document_id)
        return _align_blocked(run, job, pair, scorer, time_slice, simple, complex_side)
    started = time.perf_counter()
    outcome = _score(scorer, pair, read.simple, read.complex_side)
    writes.add(AlignedOutcome(pair, read.simple, read.complex_side, outcome, read.seconds + time.perf_counter() - started))
    return "done"


def _score(scorer: PairScorer, pair: DocumentPair, simple: SideSentences, complex_side: SideSentences) -> PairOutcome:
    try:
        return scorer.score(simple, complex_side)
    except NonFiniteScores as error:
        raise NonFiniteScores(f"document pair {pair} (id {pair.pk}): {error}") from None


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
        outcome = _score(scorer, pair, block_simple, block_complex)
        with transaction.atomic():
            store_block(run.pk, pair, block, outcome, (block_simple, simple_paragraphs), (block_complex, complex_paragraphs), cols, started)
        job.heartbeat()
        if run_stopped(run.pk):
            return STOPPED
        slice_check(time_slice)
    with transaction.atomic():
        store_blocked_pair(run.pk, pair, len(simple.ids), len(complex_side.ids))
    return "done"
