"""Writes for annotation: projects, roles, assignments and label events (append-only).

Every label write names the event it replaces (``expected_previous``): the event the
annotator's screen was showing. If another write (a second tab) got there first, the
write is refused with :class:`LabelConflict` instead of silently overwriting it.
Writes for one annotator and one document pair are serialised on the assignment row: the
row is locked first and the latest event read in a later statement, so a write that waited
for the lock sees what the other one committed. Behind that, the database holds one first
event per chain (see ``LabelEvent``), and a write that still loses a race gets the same
:class:`LabelConflict`, never an IntegrityError. The lock, the checks and the latest-event read
are :mod:`annotation.labels`' write guard.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from alignment.errors import Conflict
from alignment.models import DocumentPair
from annotation import labels
from annotation.client_actions import (
    client_action_id_check,
    client_action_reused,
    client_action_unique,
    event_action_id,
    same_action,
    stored_action,
)
from annotation.models import ITEM_COMMENT_MAX_CHARS, AnnotationProject, Assignment, ItemEvent, LabelEvent, ProjectMembership
from annotation.projects.assigning import assignment_create as assignment_create  # re-exported: services is the entry
from annotation.projects.assigning import assignments_distribute as assignments_distribute
from annotation.projects.assigning import assignments_distribute_press as assignments_distribute_press
from annotation.projects.assigning import assignments_distribute_stop as assignments_distribute_stop
from annotation.projects.creating import project_create as project_create
from annotation.provenance import shown_provenance

SECONDS_SPENT_MAX = 24 * 60 * 60  # more is not a time on one item but a broken client: refused (the database too, SECONDS_SPENT_SANE)


class LabelConflict(Conflict):
    """The pair's label changed since the screen loaded it (another tab or a double submit)."""

    def __init__(self, message: str, current: LabelEvent | None) -> None:
        super().__init__(message)
        self.current = current


def seconds_spent_clean(seconds: float | None) -> float | None:
    """The client's time on an item, checked: a finite number of seconds from 0 to 24 h, or a ValueError naming the field.

    NaN or infinity would be stored (PostgreSQL takes them) and then break every JSON answer
    that lists the row; more than 24 h on one item is a broken client, not a time (the screen
    never sends more), and used to be stored as 24 h, which then dominated the time figures.
    All are refused here, for every caller. Long but plausible times (a tab left open over a
    break) are stored as sent; the time figures count them apart (ANNOTATION_IDLE_SECONDS,
    :func:`annotation.projects.members.label_times`).
    """
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValueError(f"seconds_spent: {seconds!r} is not a number of seconds")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds_spent: {seconds!r} must be a finite number of seconds, at least 0")
    if seconds > SECONDS_SPENT_MAX:
        raise ValueError(f"seconds_spent: {seconds!r} is more than {SECONDS_SPENT_MAX} seconds (24 hours) on one item")
    return float(seconds)


def seconds_spent_parse(raw: object) -> float | None:
    """``seconds_spent`` as a form sends it (empty: not measured), checked as :func:`seconds_spent_clean` does."""
    text = str(raw if raw is not None else "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"seconds_spent: {text!r} is not a number of seconds") from None
    return seconds_spent_clean(seconds)


def _is_chain_race(error: IntegrityError) -> bool:
    """Whether the insert lost a race for a chain slot (a first event or a ``previous`` someone else took)."""
    constraint = getattr(getattr(error.__cause__, "diag", None), "constraint_name", None) or ""
    return constraint in LabelEvent.CHAIN_CONSTRAINTS or constraint.endswith("previous_id_key")


def membership_set(*, project: AnnotationProject, user: AbstractBaseUser, role: str) -> ProjectMembership:
    if role not in ProjectMembership.Role.values:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ProjectMembership.Role.values)}")
    membership, _ = ProjectMembership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def label_record(
    *,
    project: AnnotationProject,
    annotator: AbstractBaseUser,
    pair: DocumentPair,
    simple_sentence_id: int,
    complex_sentence_id: int,
    label: str,
    expected_previous: int | None,
    source: str = LabelEvent.Source.HUMAN,
    seconds_spent: float | None = None,
    client_action_id: str = "",
    event_of_action: int = 0,
    shown: str = "",
    provenance: dict[str, Any] | None = None,
) -> LabelEvent:
    """Append the annotator's new label for a sentence pair of ``pair``.

    ``expected_previous`` is the id of the event the screen showed for this sentence pair
    (None when it showed no label). Raises ValueError for a bad label or sentences
    outside the pair, PermissionError when the pair is not assigned to the annotator,
    and LabelConflict when the label changed meanwhile. A resend of an action already stored
    (the same ``client_action_id``, see :mod:`annotation.client_actions`) stores nothing and
    returns the sentence pair's latest event, whatever ``expected_previous`` says. ``event_of_action``
    is the event's position in an action that stores several (``labelling/edits.py``); ``shown``: which suggestions it showed;
    ``provenance``: the event's ``suggestion_run`` and ``suggestion`` when the caller made them (a bulk accept's).
    """
    labels.label_check(label, unlabelled=True)
    if provenance is None:
        provenance = shown_provenance(project, pair, shown, source)  # {} unless the screen showed refreshed suggestions
    if source not in LabelEvent.Source.values or source in (LabelEvent.Source.UNDO, LabelEvent.Source.ADJUDICATION):
        raise ValueError(f"unknown or reserved source {source!r}")
    seconds_spent = seconds_spent_clean(seconds_spent)
    client_action_id = event_action_id(client_action_id_check(client_action_id), event_of_action)
    try:
        with transaction.atomic(), client_action_unique(client_action_id):
            latest = labels.write_guard(project, annotator, pair, simple_sentence_id, complex_sentence_id)
            stored = stored_action(LabelEvent.objects, project=project, annotator=annotator, pair=pair, client_action_id=client_action_id)
            if stored is not None:
                if (stored.source, stored.simple_sentence_id, stored.complex_sentence_id, stored.new_label) != (
                    source, simple_sentence_id, complex_sentence_id, label,
                ):  # fmt: skip
                    raise client_action_reused(client_action_id)
                return labels.latest_event(project, annotator, simple_sentence_id, complex_sentence_id)
            if (latest.pk if latest else None) != expected_previous:
                raise _stale(latest)
            old = latest.new_label if latest else LabelEvent.Label.NONE
            event = LabelEvent.objects.create(
                project=project, pair=pair, annotator=annotator, simple_sentence_id=simple_sentence_id,
                complex_sentence_id=complex_sentence_id, old_label=old, new_label=label, source=source,
                previous_id=latest.pk if latest else None, seconds_spent=seconds_spent, client_action_id=client_action_id, **provenance,
            )  # fmt: skip
            if (old == LabelEvent.Label.NONE) != (label == LabelEvent.Label.NONE):  # a label set or cleared: the count may move
                labels.assignments_recount(project, pair_ids=[pair.pk], annotator_id=annotator.pk)
            return event
    except IntegrityError as error:  # the lock makes this rare; the constraints make it safe
        if not _is_chain_race(error):
            raise
        raise _stale(labels.latest_event(project, annotator, simple_sentence_id, complex_sentence_id)) from None


def _stale(latest: LabelEvent | None) -> LabelConflict:
    return LabelConflict(
        "this pair was changed elsewhere (another tab?) since this page loaded it: "
        f"it is now {_label_name(latest)}; reload to see the current label",
        latest,
    )


def adjudicate(
    *,
    project: AnnotationProject,
    reviewer: AbstractBaseUser,
    pair: DocumentPair,
    simple_sentence_id: int,
    complex_sentence_id: int,
    label: str,
    expected_previous: int | None,
) -> LabelEvent:
    """Set the final label of a sentence pair (an adjudication event; annotators' own events stay as they are)."""
    labels.label_check(label)
    if not project.pairs.filter(pk=pair.pk).exists():
        raise ValueError(f"document pair {pair.pk} is not part of project {project.name!r}")
    labels.sentences_check(pair, simple_sentence_id, complex_sentence_id)
    try:
        with transaction.atomic():
            DocumentPair.objects.select_for_update().filter(pk=pair.pk).first()  # one adjudicator write per pair at a time
            latest = labels.latest_adjudication(project, simple_sentence_id, complex_sentence_id)  # a new snapshot, after the lock
            if (latest.pk if latest else None) != expected_previous:
                raise LabelConflict(f"another reviewer set this pair to {_label_name(latest)} meanwhile; reload", latest)
            return LabelEvent.objects.create(
                project=project,
                pair=pair,
                annotator=reviewer,
                simple_sentence_id=simple_sentence_id,
                complex_sentence_id=complex_sentence_id,
                old_label=latest.new_label if latest else "",
                new_label=label,
                source=LabelEvent.Source.ADJUDICATION,
                previous=latest,
            )
    except IntegrityError as error:
        if not _is_chain_race(error):
            raise
        latest = labels.latest_adjudication(project, simple_sentence_id, complex_sentence_id)
        raise LabelConflict(f"another reviewer set this pair to {_label_name(latest)} meanwhile; reload", latest) from None


def pair_verify(*, project: AnnotationProject, pair: DocumentPair, by: AbstractBaseUser, verified: bool = True, note: str = ""):
    """Mark the pair verified (gold) or withdraw that; verifying needs every item settled."""
    from annotation.adjudication.review import pair_item_states
    from annotation.models import PairVerification

    if verified:
        pending = [state for state in pair_item_states(project, pair) if state.final is None]
        if pending:
            raise ValueError(
                f"{len(pending)} sentence pair(s) still need adjudication or every annotator's labels before {pair} can be verified"
            )
    return PairVerification.objects.create(project=project, pair=pair, verified=verified, by=by, note=note)


def label_undo(
    *, project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, client_action_id: str = ""
) -> LabelEvent | None:
    """:func:`label_undo_action`'s last undo event (the only one, unless the action stored several); None when nothing is left."""
    events = label_undo_action(project=project, annotator=annotator, pair=pair, client_action_id=client_action_id)
    return events[-1] if events else None


def label_undo_action(
    *, project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, client_action_id: str = ""
) -> list[LabelEvent]:
    """Undo the annotator's most recent not-yet-undone action in ``pair`` by appending the inverse of each of its events.

    An action is one event, or every event of an edit that stored several (see
    :mod:`annotation.client_actions`), undone newest first. Repeated undos walk further back.
    Returns the undo events; none when nothing is left to undo. A resend of an undo already stored
    (the same ``client_action_id``) undoes nothing more: it returns the latest events of the
    sentence pairs that undo changed.
    """
    client_action_id = client_action_id_check(client_action_id)
    with transaction.atomic(), client_action_unique(client_action_id):
        labels.assignment_lock(project, annotator, pair)
        stored = stored_action(LabelEvent.objects, project=project, annotator=annotator, pair=pair, client_action_id=client_action_id)
        if stored is not None:
            if stored.source != LabelEvent.Source.UNDO:
                raise client_action_reused(client_action_id)
            undos = same_action(LabelEvent.objects.filter(annotator=annotator, pair=pair), client_action_id).order_by("pk")
            return [labels.latest_event(project, annotator, e.simple_sentence_id, e.complex_sentence_id) for e in undos]
        undone_ids = LabelEvent.objects.filter(project=project, annotator=annotator, pair=pair, undoes__isnull=False).values("undoes_id")
        open_events = labels.own_events(project, annotator=annotator, pair=pair, undoes__isnull=True).exclude(pk__in=undone_ids)
        target = open_events.order_by("-pk").first()
        if target is None:
            return []
        item = {"project": project, "pair": pair, "annotator": annotator}
        undos = []
        for position, event in enumerate(list(same_action(open_events, target.client_action_id).order_by("-pk")) or [target]):
            latest = labels.latest_event(project, annotator, event.simple_sentence_id, event.complex_sentence_id)
            undos.append(LabelEvent.objects.create(
                **item, simple_sentence_id=event.simple_sentence_id, complex_sentence_id=event.complex_sentence_id,
                old_label=latest.new_label if latest else "", new_label=event.old_label, source=LabelEvent.Source.UNDO,
                previous=latest, undoes=event, client_action_id=event_action_id(client_action_id, position),
            ))  # fmt: skip
        labels.assignments_recount(project, pair_ids=[pair.pk], annotator_id=annotator.pk)
        return undos


def assignment_complete(*, project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> tuple[Assignment, bool]:
    """Mark the annotator's pair done: (the assignment, whether this finished anything new).

    New is a pair not done before, or one whose labels the annotator changed after marking it done (its
    ``completed_at`` then moves to now: finished again, with those labels). "Done" pressed again on a finished
    pair nobody has changed since finishes nothing, so the caller queues no automatic adaptation for it.
    """
    with transaction.atomic():
        assignment = labels.assignment_lock(project, annotator, pair)  # label writes on the pair wait: the check below holds
        finished = assignment.completed_at is None or (
            labels.own_events(project, annotator=annotator, pair=pair, created_at__gt=assignment.completed_at).exists()
        )
        if finished:
            assignment.completed_at = timezone.now()
            assignment.save(update_fields=["completed_at"])
    return assignment, finished


ITEM_EVENT_KINDS = (ItemEvent.Kind.SKIP, ItemEvent.Kind.FLAG, ItemEvent.Kind.UNFLAG, ItemEvent.Kind.COMMENT)


def item_event_record(
    *,
    project: AnnotationProject,
    annotator: AbstractBaseUser,
    pair: DocumentPair,
    kind: str,
    text: str = "",
    simple_sentence_id: int | None = None,
    complex_sentence_id: int | None = None,
    test_item: bool = False,
    client_action_id: str = "",
) -> ItemEvent:
    """Append a skip, flag, unflag or comment by the annotator on ``pair`` (or one sentence pair of it).

    Raises ValueError naming the field for an unknown kind, an empty or over-long comment or
    sentences outside the pair, and PermissionError when the pair is not assigned to the annotator.
    A ``test_item`` (a gold item served in queue mode, whose pair may be nobody's assignment) needs
    no assignment: the sentence pair must be one of the project's gold items, and the caller
    checks the role, as for answering it. A resend of an event already stored (the same
    ``client_action_id``) returns that event and stores nothing.
    """
    client_action_id = client_action_id_check(client_action_id)
    if kind not in ITEM_EVENT_KINDS:
        raise ValueError(f"kind: unknown item event {kind!r}; kinds: {', '.join(ITEM_EVENT_KINDS)}")
    text = text.strip() if kind == ItemEvent.Kind.COMMENT else ""
    if kind == ItemEvent.Kind.COMMENT and not text:
        raise ValueError("text: the comment is empty; write something or cancel")
    if len(text) > ITEM_COMMENT_MAX_CHARS:
        raise ValueError(f"text: the comment has {len(text)} characters; at most {ITEM_COMMENT_MAX_CHARS} are kept")
    if "\x00" in text:  # a multipart body is not checked before the view (webapp/lib/input_guard.py); PostgreSQL refuses NUL
        raise ValueError("text: contains a NUL character (\\0), which no text here can hold; remove it and send again")
    if (simple_sentence_id is None) != (complex_sentence_id is None):
        raise ValueError("simple_sentence_id, complex_sentence_id: give both sentences of the item or neither")
    if simple_sentence_id is not None:
        labels.sentences_check(pair, simple_sentence_id, complex_sentence_id)
    with transaction.atomic(), client_action_unique(client_action_id):
        if not test_item:
            labels.assignment_lock(project, annotator, pair)
        elif not project.gold_items.filter(simple_sentence_id=simple_sentence_id, complex_sentence_id=complex_sentence_id).exists():
            raise ValueError(f"sentences {simple_sentence_id}~{complex_sentence_id} are not a test item of project {project.name!r}")
        stored = stored_action(ItemEvent.objects, project=project, annotator=annotator, pair=pair, client_action_id=client_action_id)
        if stored is not None:
            if (stored.kind, stored.text, stored.simple_sentence_id, stored.complex_sentence_id) != (
                kind, text, simple_sentence_id, complex_sentence_id,
            ):  # fmt: skip
                raise client_action_reused(client_action_id)
            return stored
        event = ItemEvent.objects.create(
            project=project,
            pair=pair,
            annotator=annotator,
            kind=kind,
            text=text,
            simple_sentence_id=simple_sentence_id,
            complex_sentence_id=complex_sentence_id,
            client_action_id=client_action_id,
        )
        if kind == ItemEvent.Kind.SKIP and not test_item:  # the item leaves the annotator's queue
            labels.assignments_recount(project, pair_ids=[pair.pk], annotator_id=annotator.pk)
        return event


def item_skip_undo(*, skip: ItemEvent) -> ItemEvent:
    """Take back a skip by appending an undo event naming it (the skip itself stays in the history)."""
    if skip.kind != ItemEvent.Kind.SKIP:
        raise ValueError(f"item event {skip.pk} is a {skip.kind}, not a skip")
    with transaction.atomic():
        undo = ItemEvent.objects.create(
            project_id=skip.project_id,
            pair_id=skip.pair_id,
            annotator_id=skip.annotator_id,
            kind=ItemEvent.Kind.UNDO,
            simple_sentence_id=skip.simple_sentence_id,
            complex_sentence_id=skip.complex_sentence_id,
            undoes=skip,
        )
        labels.assignments_recount(skip.project, pair_ids=[skip.pair_id], annotator_id=skip.annotator_id)  # back in the queue
    return undo


def _label_name(event: LabelEvent | None) -> str:
    return LabelEvent.label_name(event.new_label if event is not None else "")


def paragraph_correction_record(
    *, project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, links: Sequence[tuple[int, int]]
):
    """Store the annotator's paragraph alignment given as (complex position, simple position) links.

    Linked paragraphs form groups by connectivity, so neighbouring paragraphs linked to
    the same paragraph merge into one group, as in the aligner. Positions count the
    paragraphs that have sentences; a position outside either document is a ValueError.
    """
    from alignment.models import Paragraph
    from annotation.models import ParagraphCorrection
    from models_ml.data.io import connected_groups

    counts = [
        Paragraph.objects.filter(document_id=document_id, sentences__isnull=False).distinct().count()
        for document_id in (pair.complex_document_id, pair.simple_document_id)
    ]
    for complex_position, simple_position in links:
        if not (0 <= complex_position < counts[0] and 0 <= simple_position < counts[1]):
            raise ValueError(
                f"paragraph link ({complex_position}, {simple_position}) is outside the documents "
                f"({counts[0]} complex and {counts[1]} simple paragraphs)"
            )
    groups = connected_groups((c, s, "aligned") for c, s in links)
    with transaction.atomic():
        labels.assignment_lock(project, annotator, pair)
        return ParagraphCorrection.objects.create(
            project=project, pair=pair, annotator=annotator, groups=[[list(g.complex), list(g.simple)] for g in groups]
        )
