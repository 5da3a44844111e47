"""Reads for adjudication and verification: the state of every labelled sentence pair of a document pair.

An item is a (simple, complex) sentence pair that some annotator labelled. For each
annotator assigned the document pair, their label is their current label, or
"not aligned" when they marked the pair done without labelling the item, or missing
while they are still working. The item is settled when a reviewer adjudicated it, or
when every assigned annotator gave the same label (accepted automatically, unless the
project adjudicates everything).
"""

from __future__ import annotations

from dataclasses import dataclass

from alignment.models import DocumentPair, Sentence
from annotation.models import AnnotationProject, Assignment, LabelEvent, PairVerification
from annotation.selectors import latest_label_events


@dataclass
class ItemState:
    simple: Sentence
    complex: Sentence
    labels: dict[str, str | None]  # annotator username -> label, None while they are still working
    adjudication: LabelEvent | None
    agreed: str | None  # the label everyone gave, when they all gave one and agree

    @property
    def disagreement(self) -> bool:
        given = [label for label in self.labels.values() if label is not None]
        return len(set(given)) > 1

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
            from annotation.queue import flagged_annotator_ids

            flagged = flagged_annotator_ids(project)
        assignments = [a for a in assignments if a.annotator_id not in flagged]
    own: dict[tuple[int, int], dict[int, str]] = {}  # item -> annotator id -> current label
    for annotator_id, simple_id, complex_id, label in latest_label_events(project, pair=pair).values_list(
        "annotator_id", "simple_sentence_id", "complex_sentence_id", "new_label"
    ):
        own.setdefault((simple_id, complex_id), {})[annotator_id] = label
    adjudications = {
        (event.simple_sentence_id, event.complex_sentence_id): event
        for event in LabelEvent.objects.filter(project=project, pair=pair, source=LabelEvent.Source.ADJUDICATION)
        .order_by("simple_sentence_id", "complex_sentence_id", "-pk")
        .distinct("simple_sentence_id", "complex_sentence_id")
    }
    items = sorted({k for k, by in own.items() if any(by.values())} | set(adjudications))
    sentences = Sentence.objects.in_bulk({i for key in items for i in key})
    states = []
    for key in items:
        labels: dict[str, str | None] = {}
        for assignment in assignments:
            label = own.get(key, {}).get(assignment.annotator_id, "")
            if not label:
                label = "not_aligned" if assignment.completed_at else None
            labels[assignment.annotator.get_username()] = label
        given = list(labels.values())
        agreed = given[0] if given and None not in given and len(set(given)) == 1 and not project.adjudicate_all else None
        states.append(ItemState(sentences[key[0]], sentences[key[1]], labels, adjudications.get(key), agreed))
    states.sort(key=lambda s: (s.simple.index, s.complex.index))
    return states


def pair_verified(project: AnnotationProject, pair: DocumentPair) -> PairVerification | None:
    """The latest verification row when it says verified, else None."""
    latest = PairVerification.objects.filter(project=project, pair=pair).order_by("-pk").first()
    return latest if latest is not None and latest.verified else None


def reviewer_changes(project: AnnotationProject, annotator) -> list[tuple[ItemState, str | None]]:
    """Items of the annotator's pairs where a reviewer's final label differs from theirs."""
    from annotation.queue import flagged_annotator_ids

    changes = []
    name = annotator.get_username()
    flagged = flagged_annotator_ids(project) if project.exclude_flagged else set()
    for assignment in Assignment.objects.filter(project=project, annotator=annotator).select_related("pair"):
        for state in pair_item_states(project, assignment.pair, flagged=flagged):
            if state.adjudication is not None and state.labels.get(name) != state.final:
                changes.append((state, state.labels.get(name)))
    return changes
