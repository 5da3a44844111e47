"""Edits of the alignment view: several label changes stored as one action, all or nothing.

The alignment view's keys (merge two groups, split one, dissolve one, mark a sentence unaligned,
accept a paragraph's suggestions) change the labels of several sentence pairs at once. The screen
works out which pairs change and sends them as one edit: a list of changes, each naming the event
it replaces, as a single label write does. They are stored in one transaction as ordinary
:class:`LabelEvent` rows (labels have no other storage): the first with the edit's
``client_action_id``, the others with ``id.2``, ``id.3``… (:mod:`annotation.client_actions`), so
``u`` undoes the whole edit and a resend stores nothing twice. One stale change refuses the whole
edit (409, naming its sentence pair); bad input refuses it naming the change and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from alignment.errors import ServiceError
from alignment.importing.json_input import JsonInputError, json_loads_bounded
from alignment.models import DocumentPair
from annotation import labels, services
from annotation.client_actions import ACTION_EVENTS_MAX
from annotation.labelling.bulk import bulk_provenance
from annotation.labels import LINKED_LABELS
from annotation.models import AnnotationProject, LabelEvent
from annotation.provenance import shown_check, suggestion_provenance

LABEL_SOURCES = (LabelEvent.Source.HUMAN, LabelEvent.Source.SUGGESTION)  # of one label
EDIT_SOURCES = (*LABEL_SOURCES, LabelEvent.Source.BULK)  # of an edit's changes: bulk accept is an edit


@dataclass(frozen=True)
class LabelChange:
    """One sentence pair's new label in an edit, and the event the screen showed there (None: no label yet)."""

    simple: int
    complex: int
    label: str
    expected_previous: int | None
    source: str = LabelEvent.Source.HUMAN


class EditConflict(services.LabelConflict):
    """A change of the edit found its sentence pair changed elsewhere: nothing of the edit was stored."""

    def __init__(self, message: str, current: LabelEvent | None, change: LabelChange) -> None:
        super().__init__(message, current)
        self.change = change


def _id(value: object, where: str, *, optional: bool = False) -> int | None:
    if optional and value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServiceError(f"{where}: {value!r} is not an id (a whole number from 1)", field="changes")
    return value


def source_parse(value: object, where: str, *, field: str = "source", allowed: tuple[str, ...] = LABEL_SOURCES) -> str:
    """A label's ``source`` from the screen: ``human`` (also when absent) or ``suggestion`` (the annotator accepted
    the aligner's suggestion: Enter in the focus view, accept in the alignment view, A for a paragraph); in an edit
    also ``bulk`` (bulk accept, :mod:`annotation.labelling.bulk`)."""
    source = str(value or LabelEvent.Source.HUMAN)
    if source not in allowed:
        raise ServiceError(f"{where}: {source[:40]!r} is not one of {', '.join(allowed)}", field=field)
    return source


def changes_parse(raw: str) -> list[LabelChange]:
    """The ``changes`` field: a JSON list of ``{"simple", "complex", "label", "expected_previous", "source"}``.

    ``source`` is ``human`` (the default) or ``suggestion`` (the change accepts the aligner's
    suggestion). ServiceError naming the change (``changes[2].label``) for anything else, for a
    sentence pair changed twice, and for an empty or too long list.
    """
    try:
        items = json_loads_bounded(raw or "")
    except JsonInputError as error:  # nested too deep (json's own RecursionError was a 500), a NUL, half a surrogate pair
        raise ServiceError(f"changes: {error}", field="changes") from None
    except ValueError:
        raise ServiceError("changes: not JSON (a list of {simple, complex, label, expected_previous})", field="changes") from None
    if not isinstance(items, list) or not items:
        raise ServiceError("changes: an edit is a non-empty list of changes", field="changes")
    if len(items) > ACTION_EVENTS_MAX:
        raise ServiceError(f"changes: {len(items)} changes in one edit; at most {ACTION_EVENTS_MAX}", field="changes")
    changes: list[LabelChange] = []
    seen: dict[tuple[int, int], int] = {}
    for k, item in enumerate(items):
        where = f"changes[{k}]"
        if not isinstance(item, dict):
            raise ServiceError(f"{where}: {item!r} is not an object", field="changes")
        try:
            label = labels.label_check(str(item.get("label", "")), unlabelled=True)
        except ValueError as error:
            raise ServiceError(f"{where}.label: {error}", field="changes") from None
        source = source_parse(item.get("source"), f"{where}.source", field="changes", allowed=EDIT_SOURCES)
        simple, complex_ = _id(item.get("simple"), f"{where}.simple"), _id(item.get("complex"), f"{where}.complex")
        if (simple, complex_) in seen:
            raise ServiceError(
                f"{where}: simple {simple} ~ complex {complex_} is already changes[{seen[(simple, complex_)]}]", field="changes"
            )
        seen[(simple, complex_)] = k
        expected = _id(item.get("expected_previous"), f"{where}.expected_previous", optional=True)
        changes.append(LabelChange(simple, complex_, label, expected, source))
    return changes


def label_edit_record(
    *,
    project: AnnotationProject,
    annotator: AbstractBaseUser,
    pair: DocumentPair,
    changes: list[LabelChange],
    seconds_spent: float | None,
    client_action_id: str,
    shown: str = "",
    bulk_threshold: str = "",
) -> list[LabelEvent]:
    """Store every change of the edit as a label event, in one transaction: all of them, or none.

    The edit's time is shared by its events; ``shown`` (which suggestions the screen showed) is recorded on each. A resend of an edit already stored (the same
    ``client_action_id``) stores nothing and returns the sentence pairs' latest events. A bulk accept's changes all
    have source ``bulk`` and link (aligned or partial), and ``bulk_threshold`` says which confidence the screen
    accepted from: each label records the server's estimate there (:func:`annotation.labelling.bulk.bulk_provenance`).
    """
    if not changes:
        raise ServiceError("changes: an edit needs at least one change", field="changes")
    resent = LabelEvent.objects.filter(project=project, pair=pair, annotator=annotator, client_action_id=client_action_id).exists()
    provenance = _bulk_provenance(project, pair, changes, bulk_threshold, shown, resent=resent)
    if not client_action_id:
        raise ServiceError("client_action_id: an edit needs one (its undo takes back every change it made)", field="client_action_id")
    seconds = services.seconds_spent_clean(seconds_spent)
    share = seconds / len(changes) if seconds is not None else None
    events = []
    with transaction.atomic():
        for k, change in enumerate(changes):
            try:
                events.append(
                    services.label_record(
                        project=project,
                        annotator=annotator,
                        pair=pair,
                        simple_sentence_id=change.simple,
                        complex_sentence_id=change.complex,
                        label=change.label,
                        expected_previous=change.expected_previous,
                        source=change.source,
                        seconds_spent=share,
                        client_action_id=client_action_id,
                        event_of_action=k,
                        shown=shown,
                        provenance=provenance,
                    )  # fmt: skip
                )
            except services.LabelConflict as conflict:
                raise EditConflict(str(conflict), conflict.current, change) from None  # the answer names the pair by its ids
            except ServiceError:
                raise
            except ValueError as error:
                raise ServiceError(f"changes[{k}]: {error}", field="changes") from None
    return events


def _bulk_provenance(
    project: AnnotationProject, pair: DocumentPair, changes: list[LabelChange], threshold: str, shown: str, *, resent: bool
) -> dict[str, Any] | None:
    """The provenance fields of a bulk accept's events (None for any other edit); ServiceError for a mixed edit, a bulk
    change that does not link, or a threshold without bulk changes or bulk changes without one. A resend of a bulk
    accept already stored (``resent``) is answered with what was stored, not estimated again (the estimate may have
    moved since)."""
    bulk = [change.source == LabelEvent.Source.BULK for change in changes]
    if not any(bulk):
        if threshold.strip():
            raise ServiceError("bulk_threshold: only a bulk accept (changes with source bulk) has a threshold", field="bulk_threshold")
        return None
    if not all(bulk):
        raise ServiceError("changes: a bulk accept has only changes with source bulk", field="changes")
    for k, change in enumerate(changes):
        if change.label not in LINKED_LABELS:
            raise ServiceError(
                f"changes[{k}].label: a bulk accept accepts suggestions (aligned or partial), not {change.label!r}", field="changes"
            )
    if not threshold.strip():
        raise ServiceError("bulk_threshold: a bulk accept says which confidence it accepted from", field="bulk_threshold")
    if resent:
        return {}  # label_record answers each change with the event stored the first time
    estimate = bulk_provenance(project, threshold)
    provenance = suggestion_provenance(project, pair, shown=shown_check(shown))
    return {**provenance, "suggestion": {**provenance["suggestion"], "bulk": estimate}}
