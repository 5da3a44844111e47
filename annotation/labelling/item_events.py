"""Reads of the annotators' skips, flags and comments (:class:`ItemEvent`) for managers: the project page and the API.

"Open" reads the history as the annotation screen does: an item is flagged while its latest
flag/unflag event is a flag, a skip counts until an undo event names it (a second skip of the
same item replaces the first), and every comment stays. Who sees what follows the labels:
managers, viewers and staff see everyone's events; annotators see only their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.urls import reverse

from annotation.models import AnnotationProject, ItemEvent, ProjectMembership

OPEN_KINDS = (ItemEvent.Kind.FLAG, ItemEvent.Kind.SKIP, ItemEvent.Kind.COMMENT)
PAGE_LIMIT = 50  # rows on the project page; the API pages through all of them


@dataclass(frozen=True)
class ItemEventRow:
    event: ItemEvent
    link: str  # the review page (managers) or the annotator's own annotation page; "" when neither may be opened


@dataclass
class ItemEventSummary:
    """Open flags, skips and comments, newest first, with a count per kind."""

    rows: list[ItemEventRow] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # kind -> open events of that kind
    total: int = 0  # open events in all (rows holds at most PAGE_LIMIT of them)


def item_events_visible(project: AnnotationProject, user: AbstractBaseUser, role: str) -> QuerySet[ItemEvent]:
    """The project's item events the user may read: everyone's for managers and viewers, their own for annotators."""
    events = ItemEvent.objects.filter(project=project)
    if role == ProjectMembership.Role.ANNOTATOR:
        events = events.filter(annotator=user)
    return events


def item_events_open(events: QuerySet[ItemEvent]) -> list[ItemEvent]:
    """The events of ``events`` that still stand (standing flags, skips not undone, comments), newest first.

    Reads the history in id order in Python: item events are a human's clicks, a few per item, and
    "latest flag per item, null sentences included" is clearer here than as SQL.
    """
    flags: dict[tuple, ItemEvent] = {}
    skips: dict[tuple, ItemEvent] = {}
    undone: set[int] = set()
    comments: list[ItemEvent] = []
    history = events.select_related(
        "annotator", "pair__complex_document", "pair__simple_document", "simple_sentence", "complex_sentence"
    ).order_by("pk")
    for event in history:
        item = (event.annotator_id, event.pair_id, event.simple_sentence_id, event.complex_sentence_id)
        if event.kind in (ItemEvent.Kind.FLAG, ItemEvent.Kind.UNFLAG):
            flags[item] = event
        elif event.kind == ItemEvent.Kind.SKIP:
            skips[item] = event
        elif event.kind == ItemEvent.Kind.UNDO and event.undoes_id is not None:
            undone.add(event.undoes_id)
        elif event.kind == ItemEvent.Kind.COMMENT:
            comments.append(event)
    standing = [event for event in flags.values() if event.kind == ItemEvent.Kind.FLAG]
    standing += [event for event in skips.values() if event.pk not in undone]
    return sorted(standing + comments, key=lambda event: event.pk, reverse=True)


def item_events_standing(events: QuerySet[ItemEvent]) -> QuerySet[ItemEvent]:
    """:func:`item_events_open` in the database, unordered: the project page counts them and reads its newest
    ``PAGE_LIMIT`` from it, however long the history (tests/annotation/labelling/test_item_events_page.py checks the two agree)."""
    item = ("annotator_id", "pair_id", "simple_sentence_id", "complex_sentence_id")
    latest_flags = events.filter(kind__in=(ItemEvent.Kind.FLAG, ItemEvent.Kind.UNFLAG)).order_by(*item, "-pk").distinct(*item).values("pk")
    latest_skips = events.filter(kind=ItemEvent.Kind.SKIP).order_by(*item, "-pk").distinct(*item).values("pk")
    undone = events.filter(kind=ItemEvent.Kind.UNDO, undoes=OuterRef("pk"))
    return events.filter(
        Q(kind=ItemEvent.Kind.FLAG, pk__in=latest_flags)
        | (Q(kind=ItemEvent.Kind.SKIP, pk__in=latest_skips) & ~Exists(undone))
        | Q(kind=ItemEvent.Kind.COMMENT)
    )


def item_event_summary(project: AnnotationProject, user: AbstractBaseUser, role: str) -> ItemEventSummary:
    """What the project page's "Flags and comments" section shows to ``user`` in ``role``: the counts, and the newest rows."""
    standing = item_events_standing(item_events_visible(project, user, role))
    counts = {kind.value: 0 for kind in OPEN_KINDS}
    counts.update(standing.order_by().values_list("kind").annotate(n=Count("pk")))
    newest = list(
        standing.select_related(
            "annotator", "pair__complex_document", "pair__simple_document", "simple_sentence", "complex_sentence"
        ).order_by("-pk")[:PAGE_LIMIT]
    )
    own_pairs = set(project.assignments.filter(annotator=user, pair_id__in={e.pair_id for e in newest}).values_list("pair_id", flat=True))
    rows = [ItemEventRow(event=event, link=_item_link(project, event, user, role, own_pairs)) for event in newest]
    return ItemEventSummary(rows=rows, counts=counts, total=sum(counts.values()))


def _item_link(project: AnnotationProject, event: ItemEvent, user: AbstractBaseUser, role: str, own_pairs: set[int]) -> str:
    """Only a link the reader may open: no link at all rather than one that answers 403 or 404."""
    if role == ProjectMembership.Role.MANAGER:
        return reverse("annotation:pair_review", args=[project.pk, event.pair_id])
    if event.annotator_id == user.pk and event.pair_id in own_pairs:
        return reverse("annotation:annotate_pair", args=[project.pk, event.pair_id])
    return ""  # viewers may not open the review page; a test item's pair may be nobody's assignment
