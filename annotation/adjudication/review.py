"""Reads for adjudication and verification: the state of every labelled sentence pair of a document pair.

An item is a (simple, complex) sentence pair that some annotator labelled. For each
annotator assigned the document pair, their label is their current label, or
"not aligned" when they marked the pair done without labelling the item, or missing
while they are still working. The item is settled when a reviewer adjudicated it, or
when every assigned annotator gave the same label (accepted automatically, unless the
project adjudicates everything). ``pair_review_read`` folds the items into what the review page
shows: the decision table (open items first), per simple sentence what each annotator linked
it to next to the merged result (the side-by-side curation view), and the annotators' standing
flags, skips and comments on the pair (:class:`ReviewNote`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from alignment.models import DocumentPair, Sentence
from annotation.labelling.item_events import item_events_open
from annotation.labels import (
    LINKED_LABELS,
    UNLABELLED,
    agreed_label,
    item_labels,
    latest_adjudications,
    latest_label_events,
)
from annotation.models import AnnotationProject, Assignment, ItemEvent, LabelEvent
from models_ml.labels import NOT_ALIGNED


@dataclass
class ItemState:
    simple: Sentence
    complex: Sentence
    labels: dict[str, str | None]  # annotator username -> label, None while they are still working
    adjudication: LabelEvent | None
    agreed: str | None  # the label everyone gave, when they all gave one and agree
    bulk: frozenset[str] = frozenset()  # annotators whose current label here a bulk accept made (annotation.labelling.bulk)

    @property
    def disagreement(self) -> bool:
        given = [label for label in self.labels.values() if label is not None]
        return len(set(given)) > 1

    @property
    def row_id(self) -> str:
        """The HTML id of the item's row on the review page (htmx swaps it; the side-by-side view links to it)."""
        return f"review-{self.simple.pk}-{self.complex.pk}"

    @property
    def final(self) -> str | None:
        if self.adjudication is not None:
            return self.adjudication.new_label
        return self.agreed

    @property
    def status(self) -> str:
        if self.adjudication is not None:
            return "adjudicated"
        if self.agreed is not None:
            return "agreed" if len(self.labels) > 1 else "one annotator"
        return "disagreement" if self.disagreement else "waiting for annotators"


def pair_item_states(project: AnnotationProject, pair: DocumentPair, *, flagged: set[int] | None = None) -> list[ItemState]:
    """Every labelled sentence pair of ``pair``; ``flagged`` (annotator ids, computed once by callers that
    loop over pairs) defaults to the project's flagged annotators."""
    assignments = list(Assignment.objects.filter(project=project, pair=pair).select_related("annotator"))
    if project.exclude_flagged:
        if flagged is None:
            from annotation.labelling.quality import flagged_annotator_ids

            flagged = flagged_annotator_ids(project)
        assignments = [a for a in assignments if a.annotator_id not in flagged]
    own: dict[tuple[int, int], dict[int, str]] = {}  # item -> annotator id -> current label
    bulk: dict[tuple[int, int], set[int]] = {}  # item -> annotators whose current label is a bulk accept
    for annotator_id, simple_id, complex_id, label, source in latest_label_events(project, pair=pair).values_list(
        "annotator_id", "simple_sentence_id", "complex_sentence_id", "new_label", "source"
    ):
        own.setdefault((simple_id, complex_id), {})[annotator_id] = label
        if source == LabelEvent.Source.BULK and label:
            bulk.setdefault((simple_id, complex_id), set()).add(annotator_id)
    adjudications = {(e.simple_sentence_id, e.complex_sentence_id): e for e in latest_adjudications(project, pair=pair)}
    by_item = item_labels(
        own, [(a.annotator_id, a.annotator.get_username(), a.completed_at is not None) for a in assignments], adjudications
    )
    sentences = Sentence.all_objects.in_bulk({i for key in by_item for i in key})  # a retired sentence too, should one be labelled
    names = {a.annotator_id: a.annotator.get_username() for a in assignments}
    states = [
        ItemState(
            sentences[key[0]], sentences[key[1]], labels, adjudications.get(key),
            agreed_label(labels, adjudicate_all=project.adjudicate_all),
            frozenset(names[k] for k in bulk.get(key, ()) if k in names),
        )
        for key, labels in sorted(by_item.items())
    ]  # fmt: skip
    states.sort(key=lambda s: (s.simple.index, s.complex.index))
    return states


@dataclass(frozen=True)
class ReviewerChange:
    """An item of an annotator's pair where the reviewer's final label differs from theirs."""

    simple: Sentence
    complex: Sentence
    mine: str | None  # their label as review counts it (None while still working, or when excluded as flagged)
    final: str


def reviewer_changes(project: AnnotationProject, annotator) -> list[ReviewerChange]:
    """Items of the annotator's pairs where a reviewer's final label differs from theirs.

    The same labels :func:`pair_item_states` gives (an unlabelled item of a pair they marked done
    is "not aligned"), read in four queries however many pairs the annotator has (only the adjudicated pairs' assignments are read).
    """
    from annotation.labelling.quality import flagged_annotator_ids

    assigned = Assignment.objects.filter(project=project, annotator=annotator)
    adjudications = list(
        latest_adjudications(project, pair_id__in=assigned.values("pair_id")).select_related("simple_sentence", "complex_sentence")
    )
    if not adjudications:
        return []
    completed = dict(assigned.filter(pair_id__in={e.pair_id for e in adjudications}).values_list("pair_id", "completed_at"))
    excluded = project.exclude_flagged and annotator.pk in flagged_annotator_ids(project)
    own = latest_label_events(project, annotator=annotator, pair_id__in={e.pair_id for e in adjudications})
    mine = {(p, s, c): label for p, s, c, label in own.values_list("pair_id", "simple_sentence_id", "complex_sentence_id", "new_label")}
    changes = []
    for event in adjudications:
        key = (event.pair_id, event.simple_sentence_id, event.complex_sentence_id)
        label = None if excluded else mine.get(key, UNLABELLED) or (NOT_ALIGNED if completed[event.pair_id] else None)
        if label != event.new_label:
            changes.append(ReviewerChange(event.simple_sentence, event.complex_sentence, label, event.new_label))
    changes.sort(key=lambda c: (c.simple.document_id, c.simple.index, c.complex.index))
    return changes


@dataclass
class CurationLink:
    """One complex sentence a simple sentence is linked to in one column of the side-by-side view."""

    state: ItemState
    label: str  # aligned or partial; "" in the merged column while the item is still open


@dataclass
class CurationCell:
    """What one annotator linked one simple sentence to."""

    links: list[CurationLink]
    working: bool  # still working on an item of this line: their label there is not known yet


@dataclass
class CurationLine:
    """One simple sentence as each annotator linked it, next to the merged result: INCEpTION's curation view,
    folded to what a sentence alignment is (per simple sentence, the complex sentences it goes with)."""

    simple: Sentence
    columns: list[CurationCell]  # one per annotator, in the order of ``Review.annotators``
    merged: list[CurationLink]
    open: bool  # some item of the line has no final label yet
    disagreement: bool  # the annotators' labels differ on some item of the line


@dataclass(frozen=True)
class ReviewNote:
    """An annotator's standing flag, skip or comment on the pair, or (queue mode) on one sentence pair of it."""

    event: ItemEvent
    row_id: str  # the sentence pair's row in the decision table; "" for the whole pair

    @property
    def sentences(self) -> str:
        """ "simple #2 ~ complex #3" for a note on one sentence pair, "" for one on the whole pair."""
        if self.event.simple_sentence is None or self.event.complex_sentence is None:
            return ""
        return f"simple #{self.event.simple_sentence.index + 1} ~ complex #{self.event.complex_sentence.index + 1}"


@dataclass
class Review:
    """What the review page shows of one document pair."""

    states: list[ItemState]  # every labelled sentence pair
    shown: list[ItemState]  # the decision table: open items first, then by position
    lines: list[CurationLine]
    annotators: list[str]
    open_count: int
    disagreements_left: int  # open items the annotators disagree on
    notes: list[ReviewNote]  # standing flags, skips and comments of every annotator on the pair, oldest first

    @cached_property
    def noted_rows(self) -> dict[str, int]:
        """Row id -> notes on that sentence pair (queue-mode flags and comments), for a mark in its row."""
        counts: dict[str, int] = {}
        for note in self.notes:
            if note.row_id:
                counts[note.row_id] = counts.get(note.row_id, 0) + 1
        return counts

    @property
    def total(self) -> int:
        return len(self.states)

    @cached_property
    def shown_ids(self) -> set[str]:
        """Row ids in the decision table: the side-by-side view links only to those."""
        return {state.row_id for state in self.shown}


def curation_lines(states: list[ItemState], annotators: list[str]) -> list[CurationLine]:
    """The side-by-side view of ``states``: one line per simple sentence some annotator labelled."""
    by_simple: dict[int, list[ItemState]] = {}
    for state in states:  # already in (simple, complex) document order
        by_simple.setdefault(state.simple.pk, []).append(state)
    lines = []
    for group in by_simple.values():
        columns = [
            CurationCell(
                links=[CurationLink(s, s.labels[name]) for s in group if s.labels.get(name) in LINKED_LABELS],
                working=any(s.labels.get(name) is None for s in group),
            )
            for name in annotators
        ]
        merged = [CurationLink(s, s.final or "") for s in group if s.final in LINKED_LABELS or s.final is None]
        lines.append(
            CurationLine(
                simple=group[0].simple,
                columns=columns,
                merged=merged,
                open=any(s.final is None for s in group),
                disagreement=any(s.disagreement for s in group),
            )
        )
    return lines


def pair_review_read(project: AnnotationProject, pair: DocumentPair, *, show: str = "open") -> Review:
    """The review page's data; ``show`` is "open" (open items and settled disagreements), "all", or "bulk" (items with a
    bulk-accepted label, to spot-check)."""
    states = pair_item_states(project, pair)
    annotators = list(states[0].labels) if states else []
    if show == "bulk":
        shown = [s for s in states if s.bulk]
    else:
        shown = states if show == "all" else [s for s in states if s.final is None or s.disagreement]
    shown = sorted(shown, key=lambda s: s.final is not None)  # stable: open first, each part in document order
    return Review(
        states=states,
        shown=shown,
        lines=curation_lines(states, annotators),
        annotators=annotators,
        open_count=sum(1 for s in states if s.final is None),
        disagreements_left=sum(1 for s in states if s.final is None and s.disagreement),
        notes=review_notes(project, pair),
    )


def review_notes(project: AnnotationProject, pair: DocumentPair) -> list[ReviewNote]:
    """Every annotator's standing flags, skips and comments on ``pair`` (as the project page counts them), oldest first."""
    standing = item_events_open(ItemEvent.objects.filter(project=project, pair=pair))
    return [
        ReviewNote(
            event=event,
            row_id=f"review-{event.simple_sentence_id}-{event.complex_sentence_id}" if event.simple_sentence_id is not None else "",
        )
        for event in sorted(standing, key=lambda event: event.pk)
    ]
