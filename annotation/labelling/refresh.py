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
window clamped to the states the run stored (its Viterbi path) so that the window joins the rest,
at most ``ROW_BUDGET`` rows per request, around the annotator's most recent labels first. The
answer lists those sentences re-decoded (``candidates``); names the unlabelled sentences no label
reaches (``stored``: the screen shows the run's suggestions there, as the page loaded them, which
is what decoding them again would give or nearly); and leaves out those whose windows the budget
did not reach, which the screen asks for next (``next``: ``?from=`` that index) while it keeps
what it shows. With windows as large as the blocks, the answer is the full decoding's
(:func:`full_suggestions`, kept as the reference the tests and ``bench/refresh_latency.py`` compare
with; on a 500 x 500 pair it costs 0.5-1.5 s, the windows tens of milliseconds).

Each web process keeps the last ``PAIRS_KEPT`` pairs' stored data unpacked (scores, sentence ids,
paragraph blocks, Viterbi path): a run's results are written once and never changed, so the entry
is keyed by the run, the pair and the stored result's row (its id and creation time), and a rerun
or a flipped pair is another key.

Each annotator has at most one refresh decoding at a time, and the whole deployment at most
``REFRESH_SLOTS``, across web processes (PostgreSQL advisory locks: the cache is per process): a
request beyond that is answered 429 with ``Retry-After`` at once, and the screen keeps its
suggestions and asks again after that delay, so refreshes never queue in front of label saves.
The screen sends one refresh at a time and drops an answer that a newer change superseded.

Nothing is written: the run's stored suggestions stay as they were, and the answer lists only
unlabelled sentences, so nothing the annotator labelled changes. A label made on a suggestion the
screen refreshed records so (``kind`` ``refreshed`` in :mod:`annotation.provenance`).

The per-pair refit (:mod:`models_ml.aligning.refit`) is not run here: on DEplain-web it did not raise
group F1 at 25 % revealed (``bench/deplain_interactive.py``), and it costs more than the decoding.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from alignment.aligning.scoring import ONE_THREAD_MAX_STATES, select_candidates, torch_threads, unpack_matrices
from alignment.aligning.service import TOP_K, aligner_from_run_config
from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, DocumentPair, Sentence
from annotation.labelling.confidence import CRF, GROUP, NOT_SCORED, Confidence
from annotation.labelling.screen import suggestion_run_for
from annotation.labels import LINKED_LABELS, current_labels, latest_label_events
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
RETRY_AFTER_SECONDS = 1  # a refresh takes well under this: the annotator's own one in the way has finished by then
BUSY_RETRY_AFTER_SECONDS = 3  # every slot taken: the others' refreshes may go on, so the page waits longer
DECODER_NICENESS = 10
"""The decoding runs on a thread of its own at this niceness (on Linux, per thread), as runapp's job workers run
(``WORKER_NICE``): label saves, the database and the other web workers get the CPU first, and the decoding what they
leave. On 2 cores, 20 refresh loops at the web server's priority raised the label saves' p95 eightfold; niced,
about 1.6-fold (bench/refresh_latency.py)."""
_decoder: ThreadPoolExecutor | None = None
_decoder_lock = threading.Lock()
_USER_LOCKS, _SLOT_LOCKS = 0x5246, 0x5253  # advisory lock namespaces: per annotator, per slot


class RefreshUnavailable(ServiceError):
    """The pair cannot be re-decoded (no suggestion run, no stored scores, a model gone): the screen keeps what it shows."""


class RefreshBusy(Exception):
    """Another refresh holds the annotator's turn or every slot: answered 429, to be asked again after ``retry_after`` s."""

    def __init__(self, message: str, *, retry_after: int = RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Latest(NamedTuple):
    """An annotator's latest event on one sentence pair, as far as a refresh reads it."""

    new_label: str  # "" when taken back
    pk: int


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
    column_best: np.ndarray  # (n,) each complex sentence's best-scoring simple sentence: a candidate whatever the labels


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
            raise RefreshBusy(
                "The server is refreshing other annotators' suggestions; yours follow shortly.", retry_after=BUSY_RETRY_AFTER_SECONDS
            )
        try:
            yield
        finally:
            _unlock(_SLOT_LOCKS, slot)
    finally:
        _unlock(_USER_LOCKS, user_id)


def _try_lock(namespace: int, key: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key % 2**31])  # two int4 keys
        return bool(cursor.fetchone()[0])


def _unlock(namespace: int, key: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key % 2**31])


def refreshed_suggestions(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, *, start: int = 0) -> dict[str, Any]:
    """The unlabelled simple sentences' candidates, re-decoded near the annotator's labels of ``pair`` (module docstring).

    Answers ``{"candidates": {simple id: [entry, ...]}, "stored": simple ids, "known": labelled simple sentences,
    "run": run id, "decoded_rows": rows the CRF ran over, "next": the ``start`` of the next request or None,
    "seconds": time taken}``. ``candidates`` holds the re-decoded sentences, each entry as the screen's payload has it
    (``complex``, ``predicted``, ``score``, ``confidence``, ``basis``), suggestions first; ``stored`` the unlabelled
    sentences out of every label's reach, whose suggestions are the run's own (the screen has them from the page);
    an unlabelled sentence in neither is within reach of a label whose window the budget left for ``next``. ``start``
    skips the windows of the most recent labels that an earlier answer covered; such an answer has no ``stored``.
    RefreshUnavailable says why when the pair cannot be re-decoded.
    """
    started = time.perf_counter()
    stored = stored_pair(project, pair)
    labels = latest_labels(project, annotator, pair)
    fixed = fixed_links(labels, stored.simple_ids, stored.complex_ids)
    aligner = _aligner(stored.model_key, stored.model_config)
    centres = _centres(labels, stored)
    windows, candidates = _at_low_priority(_decoded, aligner, stored, fixed, centres, start)
    kept: list[int] = []
    if start == 0:  # the first answer also names the sentences no label reaches: the screen shows the run's own there
        reached = set(windows.decoded) | set(windows.deferred) | set(fixed)
        kept = [pk for j, pk in enumerate(stored.simple_ids) if j not in reached]
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
    row_ids = [None if j in fixed else pk for j, pk in enumerate(stored.simple_ids)]
    candidates = screen_entries(result, row_ids, stored.complex_ids)
    return {
        "candidates": candidates,
        "known": len(fixed),
        "run": stored.model_run_id,
        "decoded_rows": m,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _decoded(aligner: Aligner, stored: StoredPair, fixed: dict[int, tuple[int, ...]], centres: list[int], start: int):
    """The windows from ``centres[start:]`` decoded, and their unlabelled sentences' candidates by simple id."""
    from models_ml.aligning import window

    windows = window.decode_windows(
        aligner, stored.plan, stored.similarity, fixed, stored.viterbi, centres,
        start=start, context=window.CONTEXT_ROWS, budget=window.ROW_BUDGET,
    )  # fmt: skip
    rows = [j for j in windows.decoded if j not in fixed]
    row_ids: list[int | None] = [stored.simple_ids[j] for j in rows]
    return windows, screen_entries(_rows_only(windows.result, rows, stored.column_best), [*row_ids, None], stored.complex_ids)


def _at_low_priority(decode: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """``decode(*args, **options)`` on this process's decoder thread (``DECODER_NICENESS``, one torch thread), waited for."""
    global _decoder
    with _decoder_lock:
        if _decoder is None:
            _decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refresh-decoder", initializer=_niced)
    return _decoder.submit(_one_thread, decode, *args, **options).result()


def _niced() -> None:
    with suppress(AttributeError, OSError):  # on Linux a thread's own priority; elsewhere, or where refused, the process's
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), DECODER_NICENESS)


def _one_thread(decode: Callable[..., Any], *args: Any, **options: Any) -> Any:
    with torch_threads(1):  # a few windows: tiny tensors, which torch's thread pool only slows (ONE_THREAD_MAX_STATES)
        return decode(*args, **options)


def latest_labels(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> dict[tuple[int, int], Latest]:
    """:func:`annotation.labels.current_labels`, the two fields a refresh reads: no model instances (250 labels: 30 ms less)."""
    latest = latest_label_events(project, annotator=annotator, pair_id=pair.pk)
    return {(simple, complex_): Latest(label, pk) for simple, complex_, label, pk in latest.values_list(
        "simple_sentence_id", "complex_sentence_id", "new_label", "pk"
    )}  # fmt: skip


def fixed_links(
    labels: Mapping[tuple[int, int], LabelEvent | Latest], simple_ids: list[int], complex_ids: list[int]
) -> dict[int, tuple[int, ...]]:
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


def _centres(labels: Mapping[tuple[int, int], LabelEvent | Latest], stored: StoredPair) -> list[int]:
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
    """Read and unpack what ``run`` stored for ``pair`` (a cache miss: about 0.2 s for 500 x 500, the paragraph alignment most of it)."""
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
    return StoredPair(
        model_run_id=model_run.pk,
        model_key=model_key,
        model_config=model_run.config,
        similarity=similarity,
        simple_ids=simple_ids,
        complex_ids=complex_ids,
        plan=plan,
        viterbi=[tuple(int(c) for c in links) for links in stored[1]],
        column_best=similarity.argmax(axis=0),  # (n,)
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


def screen_entries(result: AlignmentResult, row_ids: list[int | None], complex_ids: list[int]) -> dict[str, list[dict[str, Any]]]:
    """The candidates of ``result``'s rows as the run would have stored them, by simple sentence id (``row_ids``, one per
    row; None: not answered), ordered as the screen walks them: suggestions by the CRF's belief, then near misses by
    it, then by score."""
    by_simple: dict[str, list[dict[str, Any]]] = {str(pk): [] for pk in row_ids if pk is not None}
    if not by_simple:
        return by_simple
    for candidate in select_candidates(result, {"primary": result.similarity}, "primary", TOP_K):
        if row_ids[candidate.simple] is None:
            continue
        sure = _confidence(candidate, result)
        by_simple[str(row_ids[candidate.simple])].append({
            "complex": complex_ids[candidate.complex],
            "predicted": candidate.label,
            "score": round(float(result.similarity[candidate.simple, candidate.complex]), 3),
            **sure.as_dict(),
        })  # fmt: skip
    return {simple: _ordered(entries) for simple, entries in by_simple.items()}


def _rows_only(result: AlignmentResult, rows: list[int], column_best: np.ndarray) -> AlignmentResult:
    """``result`` cut down to ``rows`` (in order) and one last row standing for all the others, so that
    :func:`select_candidates` picks each row's candidates as it would in the whole pair without scanning the whole pair.

    The rule that needs the others: each complex sentence's best-scoring simple sentence is a candidate. The last row
    scores a complex sentence above everything when its best simple sentence is not among ``rows`` (so none of
    ``rows`` is chosen for it) and below everything when it is (so that one is, as in the whole pair); its own
    candidates are dropped. Groups keep their label and score, with their simple sentences outside ``rows`` left out.
    """
    from models_ml.aligning.aligner import AlignmentResult
    from models_ml.data.io import AlignmentGroup

    position = {j: k for k, j in enumerate(rows)}
    outside = ~np.isin(column_best, rows)  # (n,)
    top = np.finfo(np.float32).max
    last = np.where(outside, top, -top).astype(np.float32)[None, :]  # (1, n)
    groups = [
        AlignmentGroup(group.complex, tuple(position[j] for j in group.simple if j in position), group.label, group.score)
        for group in result.groups
        if any(j in position for j in group.simple)
    ]
    n = result.similarity.shape[1]
    return AlignmentResult(
        groups=groups,
        similarity=np.concatenate([result.similarity[rows], last]),  # (r+1, n)
        paragraph_mask=np.concatenate([result.paragraph_mask[rows], np.zeros((1, n), dtype=bool)]),
        paragraph_groups=result.paragraph_groups,
        chosen_complex=[result.chosen_complex[j] for j in rows] + [()],
        state_marginals=np.append(result.state_marginals[rows], 1.0),
        pair_marginals=np.concatenate([result.pair_marginals[rows], np.zeros((1, n), dtype=np.float32)]),
    )


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
