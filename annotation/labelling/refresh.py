"""Suggestions that learn while the annotator labels: the pair re-decoded with their labels clamped.

After each label the screen asks for the suggestions of the simple sentences the annotator has not
labelled yet. The suggestion run's model decodes the pair again from the run's stored score matrix
(:attr:`AlignedPair.matrices`, the measure the CRF reads), with every simple sentence the annotator
has labelled **clamped** to their labels (:mod:`models_ml.aligning.clamp`): linked (aligned or
partial) to the complex sentences they linked, or to nothing when every label they gave it says
*not aligned*. The unlabelled sentences' suggestions, confidences and candidate order are then the
CRF's given those labels.

Nothing is written: the run's stored suggestions stay as they were, and the answer lists only
unlabelled sentences, so nothing the annotator labelled changes. A label made on a suggestion the
screen refreshed records so (``kind`` ``refreshed`` in :mod:`annotation.provenance`).

The per-pair refit (:mod:`models_ml.aligning.refit`) is not run here: on DEplain-web it did not raise
group F1 at 25 % revealed (``bench/deplain_interactive.py``), and it costs more than the decoding
(``bench/refresh_latency.py`` times both).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser

from alignment.aligning.scoring import ONE_THREAD_MAX_STATES, select_candidates, torch_threads, unpack_matrices
from alignment.aligning.service import TOP_K, aligner_from_run_config
from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, DocumentPair, Sentence
from annotation.labelling.confidence import CRF, GROUP, NOT_SCORED, Confidence
from annotation.labelling.screen import suggestion_run_for
from annotation.labels import LINKED_LABELS, current_labels
from annotation.models import AnnotationProject, LabelEvent
from annotation.provenance import origin_run

if TYPE_CHECKING:  # the aligner brings torch: loaded by the first refresh (_aligner), not when the process starts
    from models_ml.aligning.aligner import Aligner, AlignmentResult

ALIGNERS_KEPT = 4  # aligners of recent suggestion runs kept loaded in each web process
_aligners: OrderedDict[int, Aligner] = OrderedDict()
_aligners_lock = threading.Lock()


class RefreshUnavailable(ServiceError):
    """The pair cannot be re-decoded (no suggestion run, no stored scores, a model gone): the screen keeps what it shows."""


def refreshed_suggestions(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> dict[str, Any]:
    """The unlabelled simple sentences' candidates, re-decoded given the annotator's labels of ``pair``.

    Answers ``{"candidates": {simple id: [entry, ...]}, "known": labelled simple sentences,
    "run": run id, "seconds": decoding time}``; each entry is as the screen's payload has it
    (``complex``, ``predicted``, ``score``, ``confidence``, ``basis``), suggestions first.
    RefreshUnavailable says why when the pair cannot be re-decoded.
    """
    run, note = suggestion_run_for(project, pair)
    if run is None:
        raise RefreshUnavailable(note)
    started = time.perf_counter()
    similarity = _stored_scores(run, pair)
    run = origin_run(run, pair.pk)  # scores copied from an earlier run are decoded with that run's model
    simple_ids, simple_paragraphs = _side(pair.simple_document_id)
    complex_ids, complex_paragraphs = _side(pair.complex_document_id)
    if similarity.shape != (len(simple_ids), len(complex_ids)):
        raise RefreshUnavailable(f"the suggestion run #{run.pk} scored another version of this pair: its suggestions cannot be refreshed")
    fixed = fixed_links(current_labels(project, annotator, pair.pk), simple_ids, complex_ids)
    aligner = _aligner(run)
    states = len(complex_ids) * aligner.config.crf.max_span + 1
    with torch_threads(1, when=states <= ONE_THREAD_MAX_STATES):
        result = aligner.align(
            [""] * len(complex_ids), [""] * len(simple_ids), complex_paragraphs, simple_paragraphs, similarity=similarity, fixed=fixed
        )
    candidates = _entries(result, similarity, fixed, simple_ids, complex_ids)
    return {"candidates": candidates, "known": len(fixed), "run": run.pk, "seconds": round(time.perf_counter() - started, 3)}


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


def _stored_scores(run: AlignmentRun, pair: DocumentPair) -> np.ndarray:
    """The (m, n) scores the run's CRF decoded this pair from, as the run stored them."""
    stored = AlignedPair.objects.filter(run=run, pair=pair).values_list("matrices", flat=True).first()
    measure = run.config.get("aligner", {}).get("measure", "")
    matrices = unpack_matrices(stored or b"")
    if measure not in matrices:
        raise RefreshUnavailable(
            f"the suggestion run #{run.pk} stored no {measure or 'CRF'} scores for this pair (too big to keep, or an older run): "
            "its suggestions stay as the run made them"
        )
    return matrices[measure]


def _side(document_id: int) -> tuple[list[int], list[int]]:
    """Sentence ids in order and each one's paragraph position among paragraphs with sentences (as the run aligned them)."""
    rows = list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", "paragraph__index"))
    dense = {number: position for position, number in enumerate(sorted({paragraph for _, paragraph in rows}))}
    return [pk for pk, _ in rows], [dense[paragraph] for _, paragraph in rows]


def _aligner(run: AlignmentRun) -> Aligner:
    """The run's aligner, loaded once per web process (the few most recent runs are kept)."""
    with _aligners_lock:
        if run.pk in _aligners:
            _aligners.move_to_end(run.pk)
            return _aligners[run.pk]
    try:
        aligner = aligner_from_run_config(run.config)
    except (ValueError, OSError) as error:
        raise RefreshUnavailable(f"the suggestion run #{run.pk}'s model cannot be loaded: {error}") from None
    with _aligners_lock:
        _aligners[run.pk] = aligner
        while len(_aligners) > ALIGNERS_KEPT:
            _aligners.popitem(last=False)
    return aligner


def _entries(
    result: AlignmentResult, similarity: np.ndarray, fixed: dict[int, tuple[int, ...]], simple_ids: list[int], complex_ids: list[int]
) -> dict[str, list[dict[str, Any]]]:
    """Each unlabelled simple sentence's candidates as the run would have stored them, ordered as the screen walks them:
    suggestions by the CRF's belief, then near misses by it, then by score."""
    by_simple: dict[str, list[dict[str, Any]]] = {str(simple_ids[j]): [] for j in range(len(simple_ids)) if j not in fixed}
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
    for entries in by_simple.values():
        entries.sort(key=lambda entry: (entry["predicted"] not in LINKED_LABELS, -(entry["confidence"] or 0.0), -entry["score"]))
    return by_simple


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
