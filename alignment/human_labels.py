"""Human labels over the aligner's output on the inspection page, without alignment importing annotation.

Labels live in ``annotation``, which ``alignment`` may never import (an import-linter contract). The
researcher still needs to see where the model and the people who labelled a pair disagree, so this
module states what the page needs (:class:`HumanLabels`) and the shape of the function that provides
it (:class:`HumanLabelsProvider`). ``annotation`` registers its provider when the app starts
(``AnnotationConfig.ready``), as it connects to ``run_succeeded``; the provider decides who may see
which project's labels. Without a provider the page shows no overlay.

:func:`overlay_build` then compares the model with the humans item by item, in this layer, because
only here are the run's candidates known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from alignment.models import DocumentPair
from models_ml.labels import LINKED_LABELS

Item = tuple[int, int]  # (simple sentence index, complex sentence index), 0-based as the heatmap counts them

MISSED = "model missed"  # the humans link the pair, the model does not
EXTRA = "model extra"  # the model links the pair, the humans say not aligned
DIFFERS = "label differs"  # both link it, one says aligned and the other partial
VERDICTS = (MISSED, EXTRA, DIFFERS)


@dataclass(frozen=True)
class HumanLabel:
    """What the people said about one sentence pair."""

    label: str  # aligned | partial | not_aligned; "" while the annotators disagree and nobody decided
    status: str  # verified | adjudicated | agreed | one annotator | annotators disagree | waiting for annotators
    detail: str = ""  # each annotator's label, e.g. "anna: aligned · ben: partial"

    @property
    def label_text(self) -> str:
        return self.label.replace("_", " ") if self.label else "disagree"


@dataclass(frozen=True)
class HumanLabels:
    """One project's labels of one document pair, as the viewer may see them.

    ``verified``: a reviewer verified the pair, so the labels are gold and a sentence pair without
    an item is *not aligned*; otherwise they are the annotators' current labels (final where a
    reviewer adjudicated or everyone agreed), and a pair nobody labelled is simply unknown.
    """

    project: str
    verified: bool
    items: dict[Item, HumanLabel]
    other_projects: tuple[str, ...] = ()  # further projects that labelled the pair, not shown

    @property
    def source(self) -> str:
        if self.verified:
            return f"verified gold of project “{self.project}”"
        return f"annotators' current labels in project “{self.project}” (not verified yet)"


class HumanLabelsProvider(Protocol):
    def __call__(self, *, user: AbstractBaseUser | AnonymousUser, pair: DocumentPair) -> HumanLabels | None: ...


_provider: HumanLabelsProvider | None = None


def human_labels_provider_set(provider: HumanLabelsProvider | None) -> None:
    """Register the function that reads human labels (annotation does, at start-up); None removes it."""
    global _provider
    _provider = provider


def pair_human_labels(*, user: AbstractBaseUser | AnonymousUser, pair: DocumentPair) -> HumanLabels | None:
    """The labels of ``pair`` that ``user`` may see, or None (no provider, no labels, or no right to see them)."""
    return _provider(user=user, pair=pair) if _provider is not None else None


def verdict(model_label: str | None, human: HumanLabel | None, *, verified: bool) -> str:
    """How the model's label (None: not even a candidate) compares with the humans': a verdict, or "" when they agree.

    Where the humans have no item the pair is not aligned for gold (``verified``) and unknown otherwise;
    an item the annotators still disagree on has no verdict.
    """
    model_links = model_label in LINKED_LABELS
    if human is None:
        return EXTRA if verified and model_links else ""
    if not human.label:
        return ""
    human_links = human.label in LINKED_LABELS
    if human_links and not model_links:
        return MISSED
    if model_links and not human_links:
        return EXTRA
    if model_links and model_label != human.label:
        return DIFFERS
    return ""


@dataclass
class Overlay:
    """The humans beside one run's output for one pair."""

    labels: HumanLabels
    cells: dict[Item, tuple[HumanLabel | None, str]]  # every candidate and every human item: (human label, verdict)
    unproposed: list[tuple[Item, HumanLabel]] = field(default_factory=list)  # human links with no candidate row
    counts: dict[str, int] = field(default_factory=dict)  # verdict -> how many items

    def disagreeing(self) -> set[Item]:
        return {item for item, (_, found) in self.cells.items() if found}

    @property
    def missed(self) -> int:
        return self.counts.get(MISSED, 0)

    @property
    def extra(self) -> int:
        return self.counts.get(EXTRA, 0)

    @property
    def differs(self) -> int:
        return self.counts.get(DIFFERS, 0)


def overlay_build(labels: HumanLabels, predicted: dict[Item, str]) -> Overlay:
    """Compare ``labels`` with the model: ``predicted`` maps every candidate of the run and pair to its label."""
    overlay = Overlay(labels=labels, cells={})
    for item in sorted(predicted.keys() | labels.items.keys()):
        human = labels.items.get(item)
        found = verdict(predicted.get(item), human, verified=labels.verified)
        overlay.cells[item] = (human, found)
        if found:
            overlay.counts[found] = overlay.counts.get(found, 0) + 1
        if item not in predicted and human is not None and human.label in LINKED_LABELS:
            overlay.unproposed.append((item, human))
    return overlay
