"""Suggestions that learn while the annotator labels: the pair re-decoded with their labels clamped.

After each label the screen asks for the suggestions of the simple sentences the annotator has not
labelled yet. The suggestion run's model decodes the pair again from the run's stored score matrix
(:attr:`AlignedPair.matrices`, the measure the CRF reads), with every simple sentence the annotator
has labelled **clamped** to their labels (:mod:`models_ml.aligning.clamp`): linked (aligned or
partial) to the complex sentences they linked, or to nothing when every label they gave it says
*not aligned*. The unlabelled sentences' suggestions, confidences and candidate order are then the
CRF's given those labels.

Only what a label can change is decoded (:mod:`models_ml.aligning.window`): the sentences within
``CONTEXT_ROWS`` of a labelled one, in its paragraph block, with the sentences just outside that
window clamped to the states the run stored (its Viterbi path), at most ``ROW_BUDGET`` rows per
request, around the annotator's most recent labels first. The answer lists those sentences
re-decoded; the unlabelled sentences out of every window's reach with the run's stored suggestions
(``stored`` names them); and leaves out those whose windows the budget did not reach, which the
screen asks for next (``next``: ``?from=`` that index) while it keeps what it shows. A 500 x 500
pair costs tens of milliseconds instead of 0.5-5 s (``bench/refresh_latency.py``); with the
window as large as the block, the answer is the full decoding's (:func:`full_suggestions`, kept
as the reference the tests and the bench compare with).

Each web process keeps the last ``PAIRS_KEPT`` pairs' stored data unpacked (scores, sentence ids,
paragraph blocks, Viterbi path, stored suggestions): a run's results are written once and never
changed, so the entry is keyed by the run, the pair and the stored result's row, and a rerun or a
flipped pair is another key.

Each annotator has at most one refresh decoding at a time, and the whole deployment at most
``REFRESH_SLOTS``, across web processes (PostgreSQL advisory locks, since the cache is per process):
a request beyond that is answered 429 with ``Retry-After`` at once, and the screen keeps its
suggestions and asks again after that delay, so refreshes never queue in front of label saves.
The screen itself sends one refresh at a time and drops an answer that a newer label superseded.

Nothing is written: the run's stored suggestions stay as they were, and the answer lists only
unlabelled sentences, so nothing the annotator labelled changes. A label made on a suggestion the
screen refreshed records so (``kind`` ``refreshed`` in :mod:`annotation.provenance`).

The per-pair refit (:mod:`models_ml.aligning.refit`) is not run here: on DEplain-web it did not raise
group F1 at 25 % revealed (``bench/deplain_interactive.py``), and it costs more than the decoding.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from alignment.aligning.scoring import ONE_THREAD_MAX_STATES, select_candidates, torch_threads, unpack_matrices
from alignment.aligning.service import TOP_K, aligner_from_run_config
from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, DocumentPair, Sentence
from annotation.labelling.confidence import CRF, GROUP, NOT_SCORED, Confidence
from annotation.labelling.screen import candidates_by_simple, suggestion_run_for
from annotation.labels import LINKED_LABELS, current_labels
from annotation.models import AnnotationProject, LabelEvent
from annotation.provenance import origin_run

if TYPE_CHECKING:  # the aligner brings torch: loaded by the first refresh (_aligner), not when the process starts
    from models_ml.aligning.aligner import Aligner, AlignmentResult, BlockPlan

ALIGNERS_KEPT = 4  # aligners of recent suggestion runs kept loaded in each web process
_aligners: OrderedDict[tuple[int, str], Aligner] = OrderedDict()
_aligners_lock = threading.Lock()

PAIRS_KEPT = 16
"""Pairs whose stored data each web process keeps unpacked. A 500 x 500 pair (the largest with stored scores) takes
about 4 MB (scores, masked blocks, 2,500 stored candidates), so at most 64 MB a process; a smaller pair much less."""
_pairs: OrderedDict[tuple[Any, ...], StoredPair] = OrderedDict()
_pairs_lock = threading.Lock()

REFRESH_SLOTS = 2
"""Refreshes decoding at once in the whole deployment. One annotator holds at most one, so another's refresh always
finds one free unless several annotators are refreshing; a web worker busy decoding cannot save a label, and on the
2-core reference machine two decoding workers leave the database and the other workers a fair share (the label-save
figures under 20 refresh loops in bench/refresh_latency.py)."""
RETRY_AFTER_SECONDS = 1  # a refresh takes well under this: the one in the way has finished by then
_USER_LOCKS, _SLOT_LOCKS = 0x5246, 0x5253  # advisory lock namespaces: per annotator, per slot


class RefreshUnavailable(ServiceError):
    """The pair cannot be re-decoded (no suggestion run, no stored scores, a model gone): the screen keeps what it shows."""


class RefreshBusy(Exception):
    """Another refresh holds the annotator's turn or every slot: answered 429, to be asked again after ``retry_after`` s."""

    def __init__(self, message: str, *, retry_after: int = RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class StoredPair:
    """What one run stored for one pair, unpacked once per web process: all that a refresh reads but the labels."""

    model_run_id: int  # the run whose model made the suggestions (origin_run)
    model_key: tuple[int, str]  # its id and creation time: the key of its loaded aligner
    model_config: dict[str, Any]
    similarity: np.ndarray  # (m, n) float32, the scores the CRF decoded
    simple_ids: list[int]
    complex_ids: list[int]
    plan: BlockPlan
    viterbi: list[tuple[int, ...]]  # per simple sentence, the complex sentences of its stored state
    stored: dict[str, list[dict[str, Any]]]  # simple id -> the run's stored candidates, ordered as the refresh orders them


def refresh_in_turn(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, *, start: int = 0) -> dict[str, Any]:
    """:func:`refreshed_suggestions` within the annotator's turn and a slot (:func:`refresh_turn`): what the screen asks."""
    with refresh_turn(annotator.pk):
        return refreshed_suggestions(project, annotator, pair, start=start)


@contextmanager
def refresh_turn(user_id: int) -> Iterator[None]:
    """Hold the user's refresh lock and one of the ``REFRESH_SLOTS`` while the body runs; RefreshBusy when either is taken.

    Session-level advisory locks, released when the body ends (or the connection closes), shared by every web
    process of the database: an answer in another process counts as well as one in this one.
    """
    if not _try_lock(_USER_LOCKS, user_id):
        raise RefreshBusy("A refresh of your suggestions is still running; this one is not needed.")
    try:
        slot = next((slot for slot in range(REFRESH_SLOTS) if _try_lock(_SLOT_LOCKS, slot)), None)
        if slot is None:
            raise RefreshBusy("The server is refreshing other annotators' suggestions; yours follow shortly.")
        try:
            yield
        finally:
            _unlock(_SLOT_LOCKS, slot)
    finally:
        _unlock(_USER_LOCKS, user_id)


def _try_lock(namespace: int, key: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key])
        return bool(cursor.fetchone()[0])


def _unlock(namespace: int, key: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key])


def refreshed_suggestions(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, *, start: int = 0) -> dict[str, Any]:
    """The unlabelled simple sentences' candidates, re-decoded near the annotator's labels of ``pair`` (module docstring).

    Answers ``{"candidates": {simple id: [entry, ...]}, "stored": simple ids answered with the run's stored
    candidates, "known": labelled simple sentences, "run": run id, "decoded_rows": rows the CRF ran over,
    "next": the ``start`` of the next request or None, "seconds": time taken}``; each entry is as the screen's
    payload has it (``complex``, ``predicted``, ``score``, ``confidence``, ``basis``), suggestions first. ``start``
    skips the most recent labels' windows that an earlier answer's ``next`` says were answered; such an answer
    lists only re-decoded sentences. RefreshUnavailable says why when the pair cannot be re-decoded.
    """
    from models_ml.aligning import window

    started = time.perf_counter()
    stored = stored_pair(project, pair)
    labels = current_labels(project, annotator, pair.pk)
    fixed = fixed_links(labels, stored.simple_ids, stored.complex_ids)
    aligner = _aligner(stored.model_key, stored.model_config)
    centres = _centres(labels, stored)
    with torch_threads(1):  # a few windows: tiny tensors, which torch's thread pool only slows (ONE_THREAD_MAX_STATES)
        windows = window.decode_windows(
            aligner, stored.plan, stored.similarity, fixed, stored.viterbi, centres,
            start=start, context=window.CONTEXT_ROWS, budget=window.ROW_BUDGET,
        )  # fmt: skip
    candidates = _entries(windows.result, stored.similarity, fixed, stored.simple_ids, stored.complex_ids, rows=windows.decoded)
    kept: list[int] = []
    if start == 0:  # the first answer also puts back the run's suggestions where no label reaches
        reached = set(windows.decoded) | set(windows.deferred) | set(fixed)
        kept = [pk for j, pk in enumerate(stored.simple_ids) if j not in reached]
        candidates.update({str(pk): stored.stored.get(str(pk), []) for pk in kept})
    return {
        "candidates": candidates,
        "stored": kept,
        "known": len(fixed),
        "run": stored.model_run_id,
        "decoded_rows": windows.rows_decoded,
        "next": windows.next_centre,
        "seconds": round(time.perf_counter() - started, 3),
    }


def full_suggestions(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> dict[str, Any]:
    """Every unlabelled sentence's candidates from the whole pair decoded again: the reference for the windows (tests, bench)."""
    started = time.perf_counter()
    stored = stored_pair(project, pair)
    fixed = fixed_links(current_labels(project, annotator, pair.pk), stored.simple_ids, stored.complex_ids)
    aligner = _aligner(stored.model_key, stored.model_config)
    m, n = stored.similarity.shape
    with torch_threads(1, when=n * aligner.config.crf.max_span + 1 <= ONE_THREAD_MAX_STATES):
        simple_paragraphs, complex_paragraphs = _side(pair.simple_document_id)[1], _side(pair.complex_document_id)[1]
        result = aligner.align([""] * n, [""] * m, complex_paragraphs, simple_paragraphs, similarity=stored.similarity, fixed=fixed)
    candidates = _entries(result, stored.similarity, fixed, stored.simple_ids, stored.complex_ids, rows=range(m))
    return {
        "candidates": candidates,
        "known": len(fixed),
        "run": stored.model_run_id,
        "decoded_rows": m,
        "seconds": time.perf_counter() - started,
    }


def fixed_links(labels: dict[tuple[int, int], LabelEvent], simple_ids: list[int], complex_ids: list[int]) -> dict[int, tuple[int, ...]]:
    """Simple sentence index -> the complex indices the annotator linked it to (empty: every label says not aligned).

    A simple sentence with no label of theirs (or only labels taken back) is not in the map.
    """
    simple_index = {pk: index for index, pk in enumerate(simple_ids)}
    complex_index = {pk: index for index, pk in enumerate(complex_ids)}
    fixed: dict[int, set[int]] = {}
    for (simple_id, complex_id), event in labels.items():
        if not event.new_label or simple_id not in simple_index or complex_id not in complex_index:
            continue
        linked = fixed.setdefault(simple_index[simple_id], set())
        if event.new_label in LINKED_LABELS:
            linked.add(complex_index[complex_id])
    return {simple: tuple(sorted(linked)) for simple, linked in fixed.items()}


def _centres(labels: dict[tuple[int, int], LabelEvent], stored: StoredPair) -> list[int]:
    """The labelled simple sentences (indices), the most recently labelled first: whose windows a refresh decodes first."""
    simple_index = {pk: index for index, pk in enumerate(stored.simple_ids)}
    latest: dict[int, int] = {}
    for (simple_id, _), event in labels.items():
        if event.new_label and simple_id in simple_index:
            latest[simple_index[simple_id]] = max(latest.get(simple_index[simple_id], 0), event.pk)
    return sorted(latest, key=lambda row: -latest[row])


def stored_pair(project: AnnotationProject, pair: DocumentPair) -> StoredPair:
    """The project's suggestion run's stored data for ``pair``, from this process's cache; RefreshUnavailable when there is none."""
    run = project.suggestion_run
    aligned = AlignedPair.objects.filter(run=run, pair=pair).values_list("pk", "created_at").first() if run is not None else None
    if aligned is None:
        raise RefreshUnavailable(suggestion_run_for(project, pair)[1])
    key = (run.pk, pair.pk, *aligned, pair.simple_document_id, pair.complex_document_id)  # the time: ids can come again (a test's reset)
    with _pairs_lock:
        if key in _pairs:
            _pairs.move_to_end(key)
            return _pairs[key]
    entry = _unpacked(run, pair)
    with _pairs_lock:
        _pairs[key] = entry
        while len(_pairs) > PAIRS_KEPT:
            _pairs.popitem(last=False)
    return entry


def _unpacked(run: AlignmentRun, pair: DocumentPair) -> StoredPair:
    """Read and unpack what ``run`` stored for ``pair`` (a cache miss: about 0.3 s for 500 x 500)."""
    stored = AlignedPair.objects.filter(run=run, pair=pair).values_list("matrices", "viterbi").first() or (b"", [])
    measure = run.config.get("aligner", {}).get("measure", "")
    matrices = unpack_matrices(stored[0] or b"")
    if measure not in matrices:
        raise RefreshUnavailable(
            f"the suggestion run #{run.pk} stored no {measure or 'CRF'} scores for this pair (too big to keep, or an older run): "
            "its suggestions stay as the run made them"
        )
    similarity = matrices[measure]
    model_run = origin_run(run, pair.pk)  # scores copied from an earlier run are decoded with that run's model
    simple_ids, simple_paragraphs = _side(pair.simple_document_id)
    complex_ids, complex_paragraphs = _side(pair.complex_document_id)
    if similarity.shape != (len(simple_ids), len(complex_ids)) or len(stored[1]) != len(simple_ids):
        raise RefreshUnavailable(f"the suggestion run #{run.pk} scored another version of this pair: its suggestions cannot be refreshed")
    model_key = (model_run.pk, model_run.created_at.isoformat())
    plan = _aligner(model_key, model_run.config).blocks(similarity, simple_paragraphs, complex_paragraphs)
    by_simple = candidates_by_simple(run, pair, {})
    return StoredPair(
        model_run_id=model_run.pk,
        model_key=model_key,
        model_config=model_run.config,
        similarity=similarity,
        simple_ids=simple_ids,
        complex_ids=complex_ids,
        plan=plan,
        viterbi=[tuple(int(c) for c in links) for links in stored[1]],
        stored={str(pk): _ordered(by_simple.get(pk, [])) for pk in simple_ids},
    )


def _side(document_id: int) -> tuple[list[int], list[int]]:
    """Sentence ids in order and each one's paragraph position among paragraphs with sentences (as the run aligned them)."""
    rows = list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", "paragraph__index"))
    dense = {number: position for position, number in enumerate(sorted({paragraph for _, paragraph in rows}))}
    return [pk for pk, _ in rows], [dense[paragraph] for _, paragraph in rows]


def _aligner(key: tuple[int, str], config: dict[str, Any]) -> Aligner:
    """The aligner of the run ``key`` (its id and creation time), loaded once per web process (the few most recent are kept)."""
    with _aligners_lock:
        if key in _aligners:
            _aligners.move_to_end(key)
            return _aligners[key]
    try:
        aligner = aligner_from_run_config(config)
    except (ValueError, OSError) as error:
        raise RefreshUnavailable(f"the suggestion run #{key[0]}'s model cannot be loaded: {error}") from None
    with _aligners_lock:
        _aligners[key] = aligner
        while len(_aligners) > ALIGNERS_KEPT:
            _aligners.popitem(last=False)
    return aligner


def _entries(
    result: AlignmentResult,
    similarity: np.ndarray,
    fixed: dict[int, tuple[int, ...]],
    simple_ids: list[int],
    complex_ids: list[int],
    *,
    rows,
) -> dict[str, list[dict[str, Any]]]:
    """The candidates of the unlabelled ``rows`` as the run would have stored them, ordered as the screen walks them."""
    by_simple: dict[str, list[dict[str, Any]]] = {str(simple_ids[j]): [] for j in rows if j not in fixed}
    if not by_simple:
        return by_simple
    for candidate in select_candidates(result, {"primary": similarity}, "primary", TOP_K):
        entries = by_simple.get(str(simple_ids[candidate.simple]))
        if entries is None:
            continue
        sure = _confidence(candidate, result)
        entries.append({
            "complex": complex_ids[candidate.complex],
            "predicted": candidate.label,
            "score": round(float(similarity[candidate.simple, candidate.complex]), 3),
            **sure.as_dict(),
        })  # fmt: skip
    return {simple: _ordered(entries) for simple, entries in by_simple.items()}


def _ordered(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Suggestions by the CRF's belief, then near misses by it, then by score (a new list: cached entries are shared)."""
    return sorted(entries, key=lambda entry: (entry["predicted"] not in LINKED_LABELS, -(entry["confidence"] or 0.0), -entry["score"]))


def _confidence(candidate, result: AlignmentResult) -> Confidence:
    """As :func:`annotation.labelling.confidence.confidence_of` reads a stored candidate: its group's score when it is
    linked through neighbours only, no figure outside the aligned paragraphs, else the CRF marginal in its label."""
    j, i = candidate.simple, candidate.complex
    if not result.paragraph_mask[j, i]:
        return Confidence(None, NOT_SCORED)
    if candidate.label in LINKED_LABELS and i not in result.chosen_complex[j]:
        return Confidence(min(max(float(candidate.group_score or 0.0), 0.0), 1.0), GROUP)
    linked = min(max(candidate.crf_marginal, 0.0), 1.0)
    return Confidence(linked if candidate.label in LINKED_LABELS else 1.0 - linked, CRF)
