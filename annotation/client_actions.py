"""Screen actions sent again: the id that makes a resent label, undo or item event idempotent.

The annotation screen keeps every action it has not heard the answer to (in the page and in the
browser's localStorage) and sends it again: after a network failure, after the annotator logged
in again, after a reload. An answer can be lost after the write committed (the tab closed, the
connection dropped), so each action carries a random id that the screen makes once
(``client_action_id``). The event it stored keeps the id, one event per annotator and id (a
partial unique constraint on :class:`LabelEvent` and :class:`ItemEvent`), and a write whose id is
already stored answers with what is stored instead of writing again. Writes without an id (the
REST API, queue mode, imports) are stored as before.

The check runs after the write's assignment lock, so two sends of one action on one pair are
serialised and the second finds the first; an id reused on another pair (a client's bug, never a
resend) is refused, also when the unique constraint is what catches it.

One action may store several events (an edit of the alignment view, the undo of such an edit): the
first event carries the action's id, the others the id followed by ``.2``, ``.3``… A dot is never in
an id a client sends (the check refuses it), so these ids name one action's events and nothing
else, and an undo takes back the whole action (:func:`same_action`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, models
from django.db.models import Q

from alignment.errors import ServiceError
from alignment.models import DocumentPair
from annotation.models import CLIENT_ACTION_ID_MAX, AnnotationProject

CLIENT_ACTION_ID_MIN = 16
CLIENT_ACTION_ID_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{{CLIENT_ACTION_ID_MIN},{CLIENT_ACTION_ID_MAX}}}")
EVENT_SEPARATOR = "."
ACTION_EVENTS_MAX = 999  # events one action may store: the suffix (".999") stays within the column with an id of 60
CLIENT_ACTION_CONSTRAINTS = ("label_event_one_per_client_action", "item_event_one_per_client_action")

Event = TypeVar("Event", bound=models.Model)


def client_action_id_check(raw: object) -> str:
    """``client_action_id`` as sent: "" when absent (a write without an id), else 16 to 64 letters, digits, ``-`` or ``_``."""
    text = "" if raw is None else str(raw)
    if text and not CLIENT_ACTION_ID_PATTERN.fullmatch(text):
        shown = text if len(text) <= 80 else f"{text[:80]}…"
        raise ServiceError(
            f"client_action_id: {shown!r} is not an action id "
            f"({CLIENT_ACTION_ID_MIN} to {CLIENT_ACTION_ID_MAX} letters, digits, '-' or '_')",
            field="client_action_id",
        )
    return text


def client_action_reused(client_action_id: str) -> ServiceError:
    return ServiceError(
        f"client_action_id: {client_action_id!r} already names another action; a new action needs a new id", field="client_action_id"
    )


def stored_action(
    events: models.QuerySet[Event], *, project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, client_action_id: str
) -> Event | None:
    """The event an earlier send of the same action stored (its answer was lost), else None. Call after the write's lock.

    ServiceError when the id names an event of another document pair or project; the caller
    checks that the stored event is the same kind of action as the one sent again.
    """
    if not client_action_id:
        return None
    stored = events.filter(annotator=annotator, client_action_id=client_action_id).first()
    if stored is not None and (stored.project_id, stored.pair_id) != (project.pk, pair.pk):
        raise client_action_reused(client_action_id)
    return stored


@contextmanager
def client_action_unique(client_action_id: str) -> Iterator[None]:
    """Turn a lost race for the id's unique constraint (the same id on two pairs at once) into the refusal it is."""
    try:
        yield
    except IntegrityError as error:
        constraint = getattr(getattr(error.__cause__, "diag", None), "constraint_name", None)
        if constraint in CLIENT_ACTION_CONSTRAINTS:
            raise client_action_reused(client_action_id) from None
        raise


def event_action_id(client_action_id: str, position: int) -> str:
    """The id of the event at ``position`` (0-based) of an action that stores several: the action's own id, then ``id.2``…"""
    if not client_action_id or position == 0:
        return client_action_id
    if not 0 < position < ACTION_EVENTS_MAX or len(client_action_id) > CLIENT_ACTION_ID_MAX - 4:
        raise ServiceError(
            f"client_action_id: {client_action_id!r} cannot name {position + 1} events "
            f"(at most {ACTION_EVENTS_MAX}, with an id of at most {CLIENT_ACTION_ID_MAX - 4} characters)",
            field="client_action_id",
        )
    return f"{client_action_id}{EVENT_SEPARATOR}{position + 1}"


def same_action(events: models.QuerySet[Event], client_action_id: str) -> models.QuerySet[Event]:
    """Of ``events``, those the action that stored an event with ``client_action_id`` stored (none for an empty id)."""
    if not client_action_id:
        return events.none()
    action = client_action_id.split(EVENT_SEPARATOR)[0]
    return events.filter(Q(client_action_id=action) | Q(client_action_id__startswith=action + EVENT_SEPARATOR))
