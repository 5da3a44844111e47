"""Reads for the annotation screen of one document pair: layout, suggestions merged with labels, progress, diff.

Selectors-style: nothing here writes. The screen shows the complex and the simple
document side by side with aligned paragraphs on one row (from the project's
suggestion run), and hands the browser a JSON payload: for every simple sentence
the complex sentences worth judging (the run's candidates plus whatever the
annotator has already labelled for it) and the annotator's current labels with
the event ids that the next write must name as ``expected_previous``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from alignment.inspection import WordDiff, word_diff
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair, Paragraph, ParagraphAlignment, Sentence
from alignment.selectors import document_paragraphs
from annotation.labelling.confidence import confidences
from annotation.labels import LINKED_LABELS, current_labels, latest_adjudications
from annotation.models import AnnotationProject, Assignment, LabelEvent


@dataclass(frozen=True)
class ParagraphBlock:
    """One paragraph of one side with its sentences; ``number`` is 1-based, as shown."""

    number: int
    sentences: list[Sentence]


@dataclass
class ParagraphRow:
    """Paragraphs shown on one row: an aligned group, or (``aligned`` False) the paragraphs that the
    suggestion run aligned to nothing between two aligned groups; either side may be empty."""

    complex: list[ParagraphBlock] = field(default_factory=list)
    simple: list[ParagraphBlock] = field(default_factory=list)
    aligned: bool = True


@dataclass(frozen=True)
class Progress:
    """Simple sentences of the pair with at least one label, out of all of them."""

    labelled: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * self.labelled / self.total) if self.total else 100

    def as_dict(self) -> dict[str, int]:
        return {"labelled": self.labelled, "total": self.total, "percent": self.percent}


@dataclass
class AnnotateScreen:
    """Everything ``annotation/annotate_pair.html`` shows for one assignment."""

    project: AnnotationProject
    assignment: Assignment
    pair: DocumentPair
    rows: list[ParagraphRow]
    progress: Progress
    suggestion_note: str  # why there are no suggestions, or ""
    payload: dict[str, Any]  # for json_script: see screen_build


@dataclass(frozen=True)
class SentencePairDiff:
    simple: Sentence
    complex: Sentence
    diff: WordDiff


def suggestion_run_for(project: AnnotationProject, pair: DocumentPair) -> tuple[AlignmentRun | None, str]:
    """The project's suggestion run if it stored a result for ``pair``, else None and the reason to show."""
    run = project.suggestion_run
    if run is None:
        return None, "This project has no suggestion run: pick complex sentences yourself by clicking them."
    if not run.aligned_pairs.filter(pair=pair).exists():
        from annotation.labelling.segmentation import redecoding_note

        return None, redecoding_note(project, pair) or (
            f"The suggestion run #{run.pk} has not aligned this pair (yet): pick complex sentences yourself by clicking them."
        )
    return run, ""


@dataclass(frozen=True)
class ParagraphGroupLike:
    complex_paragraphs: list[int]
    simple_paragraphs: list[int]


def paragraph_groups_for(
    project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, run: AlignmentRun | None
) -> tuple[list, bool]:
    """The annotator's own paragraph alignment if they corrected it, else the run's; and whether it is their own."""
    from annotation.models import ParagraphCorrection

    correction = ParagraphCorrection.objects.filter(project=project, pair=pair, annotator=annotator).order_by("-pk").first()
    if correction is not None:
        return [ParagraphGroupLike(list(c), list(s)) for c, s in correction.groups], True
    groups = list(ParagraphAlignment.objects.filter(run=run, pair=pair).order_by("pk")) if run is not None else []
    return groups, False


def paragraph_rows(pair: DocumentPair, run: AlignmentRun | None, groups: list | None = None) -> list[ParagraphRow]:
    """Rows of paragraphs, aligned groups side by side; without a run, one row holding both documents.

    ParagraphAlignment indices count only paragraphs that have sentences (the aligner
    skips empty ones), so paragraphs are numbered the same way here.
    """
    complex_blocks = _blocks(pair.complex_document_id)  # position among non-empty paragraphs -> block
    simple_blocks = _blocks(pair.simple_document_id)
    if groups is None:
        groups = list(ParagraphAlignment.objects.filter(run=run, pair=pair).order_by("pk")) if run is not None else []
    if not groups:
        return [ParagraphRow(complex=complex_blocks, simple=simple_blocks)]
    rows: list[tuple[list[int], list[int]]] = []  # (complex positions, simple positions)
    placed: tuple[set[int], set[int]] = (set(), set())
    for group in groups:
        complex_positions = sorted(p for p in group.complex_paragraphs if 0 <= p < len(complex_blocks) and p not in placed[0])
        simple_positions = sorted(p for p in group.simple_paragraphs if 0 <= p < len(simple_blocks) and p not in placed[1])
        if complex_positions or simple_positions:
            rows.append((complex_positions, simple_positions))
            placed[0].update(complex_positions)
            placed[1].update(simple_positions)
    rows.sort(key=lambda row: (min(row[1], default=-1), min(row[0], default=-1)))
    gaps = _unaligned_by_gap(rows, placed, (len(complex_blocks), len(simple_blocks)))
    result: list[ParagraphRow] = []
    for k in range(len(rows) + 1):
        if k in gaps:
            complex_positions, simple_positions = gaps[k]
            result.append(
                ParagraphRow([complex_blocks[p] for p in complex_positions], [simple_blocks[p] for p in simple_positions], aligned=False)
            )
        if k < len(rows):
            complex_positions, simple_positions = rows[k]
            result.append(ParagraphRow([complex_blocks[p] for p in complex_positions], [simple_blocks[p] for p in simple_positions]))
    return result


def _unaligned_by_gap(
    rows: list[tuple[list[int], list[int]]], placed: tuple[set[int], set[int]], counts: tuple[int, int]
) -> dict[int, tuple[list[int], list[int]]]:
    """Paragraphs no group holds, by the gap they fall in: gap k lies just before aligned row k.

    A paragraph goes after the last row holding an earlier paragraph of its side, so the
    complex and simple paragraphs left over between the same two aligned groups share a row.
    """
    gaps: dict[int, tuple[list[int], list[int]]] = {}
    for side in (0, 1):
        for position in range(counts[side]):
            if position in placed[side]:
                continue
            gap = 1 + max((k for k, row in enumerate(rows) if any(p < position for p in row[side])), default=-1)
            gaps.setdefault(gap, ([], []))[side].append(position)
    return gaps


def paragraph_blocks(document_id: int) -> list[ParagraphBlock]:
    """The document's paragraphs that have sentences, in order (position = list index)."""
    return _blocks(document_id)


def _blocks(document_id: int) -> list[ParagraphBlock]:
    paragraphs: list[tuple[Paragraph, list[Sentence]]] = document_paragraphs(document_id)
    return [ParagraphBlock(number=paragraph.index + 1, sentences=sentences) for paragraph, sentences in paragraphs if sentences]


def candidates_by_simple(
    run: AlignmentRun | None, pair: DocumentPair, labels: dict[tuple[int, int], LabelEvent]
) -> dict[int, list[dict[str, Any]]]:
    """simple sentence id -> complex sentences to judge, in the order ``h``/``l`` walk them.

    Each entry: ``complex`` (sentence id), ``predicted`` (the run's label, or None for a
    pair the annotator linked that the aligner never proposed), ``score`` (the primary
    measure's raw value: it orders the list, the screen does not show it), ``confidence`` (0–1,
    in the predicted label) and ``basis`` (see :mod:`annotation.labelling.confidence`), all None
    without a suggestion. See :func:`candidate_order` for the order; the first entry is the best
    suggestion when the sentence has one, which is what ``j`` focuses.
    """
    by_simple: dict[int, dict[int, dict[str, Any]]] = {}
    if run is not None:
        rows = list(CandidateAlignment.objects.filter(run=run, pair=pair).select_related("pair", "simple_sentence", "complex_sentence"))
        sure = confidences(run, rows)
        for candidate in rows:
            by_simple.setdefault(candidate.simple_sentence_id, {})[candidate.complex_sentence_id] = {
                "complex": candidate.complex_sentence_id,
                "predicted": candidate.label,
                "score": round(candidate.score, 3),
                **sure[candidate.pk].as_dict(),
            }
    for simple_id, complex_id in labels:
        by_simple.setdefault(simple_id, {}).setdefault(complex_id, unproposed(complex_id))
    order = dict(Sentence.objects.filter(document_id=pair.complex_document_id).values_list("pk", "index"))
    return {
        simple_id: sorted(entries.values(), key=lambda entry: candidate_order(entry, order)) for simple_id, entries in by_simple.items()
    }


def unproposed(complex_id: int) -> dict[str, Any]:
    """The entry of a pair the aligner never proposed (the annotator linked it)."""
    return {"complex": complex_id, "predicted": None, "score": None, "confidence": None, "basis": None}


SUGGESTED_LABELS = LINKED_LABELS


def candidate_order(entry: dict[str, Any], document_index: dict[int, int]) -> tuple:
    """Sort key: the aligner's suggestions (aligned or partial) by score, best first; then its
    near misses (predicted not aligned) by score; then pairs it never proposed, in document order.

    So the first entry is the suggestion to accept, and a candidate the aligner rejected is
    never the one a quick ``j a`` labels.
    """
    position = document_index.get(entry["complex"], 0)
    if entry["predicted"] in SUGGESTED_LABELS:
        return (0, -entry["score"], position)
    if entry["predicted"] is not None:
        return (1, -entry["score"], position)
    return (2, 0.0, position)


@dataclass(frozen=True)
class ItemNotes:
    """The annotator's skip, flag and comments on a document pair (from :class:`ItemEvent` rows)."""

    flagged: bool
    skipped_at: str  # ISO time of the latest skip, or ""
    comments: list[dict[str, str]]  # {"text", "at"}, oldest first

    def as_dict(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "skipped_at": self.skipped_at, "comments": self.comments}


def item_notes(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> ItemNotes:
    """What the screen shows of the annotator's item events on the whole pair (queue-item events excluded)."""
    from annotation.models import ItemEvent

    flagged, skipped_at, comments = False, "", []
    events = ItemEvent.objects.filter(project=project, annotator=annotator, pair=pair, simple_sentence__isnull=True)
    for kind, text, created_at in events.order_by("pk").values_list("kind", "text", "created_at"):
        if kind in (ItemEvent.Kind.FLAG, ItemEvent.Kind.UNFLAG):
            flagged = kind == ItemEvent.Kind.FLAG
        elif kind == ItemEvent.Kind.SKIP:
            skipped_at = created_at.isoformat()
        elif kind == ItemEvent.Kind.COMMENT:
            comments.append({"text": text, "at": created_at.isoformat()})
    return ItemNotes(flagged=flagged, skipped_at=skipped_at, comments=comments)


def labels_payload(labels: dict[tuple[int, int], LabelEvent]) -> dict[str, dict[str, Any]]:
    """``"simple_id:complex_id"`` -> the current label and the id of the event that set it."""
    return {f"{simple_id}:{complex_id}": {"label": event.new_label, "event": event.pk} for (simple_id, complex_id), event in labels.items()}


_PROGRESS_SQL = f"""
    SELECT
        (SELECT count(*) FROM {Sentence._meta.db_table} WHERE document_id = %(simple_document)s AND retired_by_id IS NULL),
        (SELECT count(DISTINCT simple_sentence_id) FROM (
            SELECT DISTINCT ON (simple_sentence_id, complex_sentence_id) simple_sentence_id, new_label
            FROM {LabelEvent._meta.db_table}
            WHERE project_id = %(project)s AND annotator_id = %(annotator)s AND pair_id = %(pair)s AND source <> 'adjudication'
            ORDER BY simple_sentence_id, complex_sentence_id, id DESC
        ) latest WHERE new_label <> '')
"""


def pair_progress(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> Progress:
    """The same figures as :func:`_progress`, in one query: it runs after every label save."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            _PROGRESS_SQL,
            {"simple_document": pair.simple_document_id, "project": project.pk, "annotator": annotator.pk, "pair": pair.pk},
        )
        total, labelled = cursor.fetchone()
    return Progress(labelled=labelled, total=total)


def _progress(pair: DocumentPair, labels: dict[tuple[int, int], LabelEvent]) -> Progress:
    labelled = {simple_id for (simple_id, _), event in labels.items() if event.new_label}
    return Progress(labelled=len(labelled), total=Sentence.objects.filter(document_id=pair.simple_document_id).count())


def screen_build(*, project: AnnotationProject, assignment: Assignment) -> AnnotateScreen:
    pair = assignment.pair
    run, note = suggestion_run_for(project, pair)
    labels = current_labels(project, assignment.annotator, pair.pk)
    groups, _own = paragraph_groups_for(project, assignment.annotator, pair, run)
    rows = paragraph_rows(pair, run, groups)
    progress = _progress(pair, labels)
    payload = {
        "simple": list(Sentence.objects.filter(document_id=pair.simple_document_id).order_by("index").values_list("pk", flat=True)),
        "candidates": {str(simple_id): entries for simple_id, entries in candidates_by_simple(run, pair, labels).items()},
        **_state_payload(project, assignment.annotator, pair, labels, progress),
    }
    return AnnotateScreen(
        project=project, assignment=assignment, pair=pair, rows=rows, progress=progress, suggestion_note=note, payload=payload
    )


def pair_state(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> dict[str, Any]:
    """The part of the screen's payload that may change while it is open: ``labels``, ``progress``, ``notes``, ``decisions``.

    The screen reads it again before it trusts what it shows (a page restored by Back, actions
    left unsent by an earlier page), so its next write names the event the server holds now.
    """
    labels = current_labels(project, annotator, pair.pk)
    return _state_payload(project, annotator, pair, labels, _progress(pair, labels))


def _state_payload(
    project: AnnotationProject,
    annotator: AbstractBaseUser,
    pair: DocumentPair,
    labels: dict[tuple[int, int], LabelEvent],
    progress: Progress,
) -> dict[str, Any]:
    return {
        "labels": labels_payload(labels),
        "progress": progress.as_dict(),
        "notes": item_notes(project, annotator, pair).as_dict(),
        "decisions": reviewer_decisions(project, pair),
    }


def reviewer_decisions(project: AnnotationProject, pair: DocumentPair) -> dict[str, str]:
    """``"simple_id:complex_id"`` -> the final label a reviewer set there: the screen marks where it differs from yours."""
    latest = latest_adjudications(project, pair=pair).values_list("simple_sentence_id", "complex_sentence_id", "new_label")
    return {f"{simple_id}:{complex_id}": label for simple_id, complex_id, label in latest}


def sentence_pair_diff(pair: DocumentPair, simple_id: int, complex_id: int) -> SentencePairDiff:
    """The two sentences and their word diff; ValueError naming the sentence when it is not part of ``pair``."""
    simple = Sentence.objects.filter(pk=simple_id, document_id=pair.simple_document_id).first()
    if simple is None:
        raise ValueError(f"sentence {simple_id} is not a sentence of the simple document of pair {pair.pk}")
    complex_sentence = Sentence.objects.filter(pk=complex_id, document_id=pair.complex_document_id).first()
    if complex_sentence is None:
        raise ValueError(f"sentence {complex_id} is not a sentence of the complex document of pair {pair.pk}")
    return SentencePairDiff(simple=simple, complex=complex_sentence, diff=word_diff(complex_sentence.text, simple.text))
