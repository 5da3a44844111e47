"""The one home of labels: the label set, the current label, adjudications, verification and the write guard.

- **The label set** is :mod:`models_ml.labels` (the ML speaks the same words and may import no
  app), re-exported here with the app's rule for checking a label.
- **The current label** of a sentence pair for an annotator is never stored: it is the
  ``new_label`` of their latest own :class:`LabelEvent` there ("" once undone). Adjudications are
  a separate stream, one per sentence pair for all reviewers together. A few figures of it are kept
  on each assignment: the simple sentences of the pair with a current label, and the annotator's
  queue on the pair, recounted from the assignment's rows by every write to them
  (:func:`assignments_recount`), so that My tasks, the project page and the queue never read every
  event of a large project.
- **An item's labels** on the review page and in exports: each assigned annotator's current
  label, ``not_aligned`` when they marked the pair done without labelling the item, None while
  they are still working; the item is agreed when they all gave the same label.
- **Verification**: the latest :class:`PairVerification` row of a document pair says whether it
  is verified.
- **The write guard**: lock the annotator's assignment, check that both sentences belong to the
  pair, then read the latest own event. A label save is the hottest write, so it runs a raw-SQL
  version (:func:`write_guard`) beside its ORM twin (:func:`write_guard_orm`);
  ``tests/annotation/test_labels.py`` checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet

from alignment.models import CandidateAlignment, DocumentPair, Sentence
from annotation.models import AnnotationProject, Assignment, GoldItem, ItemEvent, LabelEvent, PairVerification
from models_ml.labels import ALIGNED, LABELS, NOT_ALIGNED, PARTIAL
from models_ml.labels import LINKED_LABELS as LINKED_LABELS  # re-exported: the app takes the label set from here

UNLABELLED = ""  # an undone label, or a label cleared through the API
LABELS_TEXT = ", ".join(LABELS)
FINAL_LABEL_NEEDED = f"an adjudication sets a final label: {ALIGNED}, {PARTIAL} or {NOT_ALIGNED}"

Item = tuple[int, int]  # (simple sentence id, complex sentence id)


def label_check(label: str, *, unlabelled: bool = False) -> str:
    """``label`` when it is one of the labels (or "" where ``unlabelled`` allows clearing); else ValueError."""
    if label in LABELS or (unlabelled and label == UNLABELLED):
        return label
    raise ValueError(f"unknown label {label!r}; labels: {LABELS_TEXT}")


# --- the current label ---------------------------------------------------------------------------


def own_events(project: AnnotationProject, **filters: Any) -> QuerySet[LabelEvent]:
    """Annotators' own label events (every source but adjudication): the history current labels come from."""
    return LabelEvent.objects.filter(project=project, **filters).exclude(source=LabelEvent.Source.ADJUDICATION)


def latest_label_events(project: AnnotationProject, **filters: Any) -> QuerySet[LabelEvent]:
    """Each annotator's latest own event per sentence pair: its ``new_label`` is their current label."""
    return (
        own_events(project, **filters)
        .order_by("annotator_id", "pair_id", "simple_sentence_id", "complex_sentence_id", "-pk")
        .distinct("annotator_id", "pair_id", "simple_sentence_id", "complex_sentence_id")
    )


def current_labels(project: AnnotationProject, annotator: AbstractBaseUser, pair_id: int) -> dict[Item, LabelEvent]:
    """(simple sentence id, complex sentence id) -> the annotator's latest event there (its new_label is the label)."""
    latest = latest_label_events(project, annotator=annotator, pair_id=pair_id)
    return {(e.simple_sentence_id, e.complex_sentence_id): e for e in latest}


def latest_event(project: AnnotationProject, annotator: AbstractBaseUser, simple_id: int, complex_id: int) -> LabelEvent | None:
    """The annotator's latest own event on one sentence pair (None before their first label)."""
    events = own_events(project, annotator=annotator, simple_sentence_id=simple_id, complex_sentence_id=complex_id)
    return events.order_by("-pk").first()


def labelled_now_subquery(project: AnnotationProject, annotator: AbstractBaseUser) -> QuerySet[LabelEvent]:
    """For ``Exists``: the annotator's current label of the outer row's (simple_sentence, complex_sentence) is set: an
    own event there with a label and none after it, which PostgreSQL answers for many outer rows at once (an
    anti-join) instead of looking up the latest event row by row."""
    same_item = {"simple_sentence": OuterRef("simple_sentence"), "complex_sentence": OuterRef("complex_sentence")}
    later = own_events(project, annotator=annotator, **same_item, pk__gt=OuterRef("pk"))
    return own_events(project, annotator=annotator, **same_item).exclude(new_label=UNLABELLED).filter(~Exists(later))


def imported_label(events: Iterable[tuple[int, str, str]]) -> tuple[int, str] | None:
    """Of one item's latest own events as (event id, label, source): the latest imported label, as (id, label)."""
    imported = [(pk, label) for pk, label, source in events if source == LabelEvent.Source.IMPORT and label]
    return max(imported) if imported else None


def item_labels(
    own: Mapping[Item, Mapping[int, str]], assignments: Sequence[tuple[int, str, bool]], adjudicated: Iterable[Item]
) -> dict[Item, dict[str, str | None]]:
    """The items of a document pair and each assigned annotator's label there, as review and export show them.

    ``own``: item -> annotator id -> current label; ``assignments``: (annotator id, name, completed).
    An item is one some annotator labels now, or one a reviewer adjudicated. An annotator who marked
    the pair done without labelling the item said ``not_aligned``; one still working gives None.
    """
    items = {item for item, by in own.items() if any(by.values())} | set(adjudicated)
    result = {}
    for item in items:
        current = own.get(item, {})
        result[item] = {
            name: current.get(annotator_id, UNLABELLED) or (NOT_ALIGNED if completed else None)
            for annotator_id, name, completed in assignments
        }
    return result


def agreed_label(labels: Mapping[str, str | None], *, adjudicate_all: bool) -> str | None:
    """The label every annotator gave, when they all gave one and agree (never when the project adjudicates all)."""
    given = list(labels.values())
    return given[0] if given and None not in given and len(set(given)) == 1 and not adjudicate_all else None


# --- adjudications and verification --------------------------------------------------------------


def latest_adjudication(project: AnnotationProject, simple_id: int, complex_id: int) -> LabelEvent | None:
    """The final label a reviewer set on one sentence pair (None while nobody adjudicated it)."""
    return (
        LabelEvent.objects.filter(
            project=project, source=LabelEvent.Source.ADJUDICATION, simple_sentence_id=simple_id, complex_sentence_id=complex_id
        )
        .order_by("-pk")
        .first()
    )


def latest_adjudications(project: AnnotationProject, **filters: Any) -> QuerySet[LabelEvent]:
    """The latest adjudication of every adjudicated sentence pair (of every document pair that ``filters`` leave)."""
    return (
        LabelEvent.objects.filter(project=project, source=LabelEvent.Source.ADJUDICATION, **filters)
        .order_by("pair_id", "simple_sentence_id", "complex_sentence_id", "-pk")
        .distinct("pair_id", "simple_sentence_id", "complex_sentence_id")
    )


def latest_verifications(project: AnnotationProject, **filters: Any) -> QuerySet[PairVerification]:
    """The latest verification row of every document pair that has one: its ``verified`` is the pair's state."""
    return PairVerification.objects.filter(project=project, **filters).order_by("pair_id", "-pk").distinct("pair_id")


def verified_pair_ids(project: AnnotationProject, **filters: Any) -> set[int]:
    """The document pairs of the project (of those ``filters`` leave) that are verified now (the gold set)."""
    return {pair_id for pair_id, verified in latest_verifications(project, **filters).values_list("pair_id", "verified") if verified}


def pair_verified(project: AnnotationProject, pair: DocumentPair) -> PairVerification | None:
    """The latest verification row when it says verified, else None."""
    latest = PairVerification.objects.filter(project=project, pair=pair).order_by("-pk").first()
    return latest if latest is not None and latest.verified else None


# The figures kept on each assignment, so that My tasks, the project page and the queue never read every label event
# of a large project: recomputed from the assignment's own rows (a few dozen, by the (project, annotator, pair) indexes)
# by each write to them, in the same statement.
# - labelled: simple sentences of the pair with a current label of the annotator;
# - labelled_ever: sentence pairs the annotator ever labelled (an undone label too), the queue's count for mixing in
#   test items;
# - queue_*: the annotator's queue on this pair over the project's suggestion run (queue_run): the suggestions they have
#   not labelled or skipped and that are no test item, how many, and the first of them in each order with its key.
_ASSIGNMENT_COUNTS_SQL = f"""
    UPDATE {Assignment._meta.db_table} a SET
      labelled = (
        SELECT count(DISTINCT latest.simple_sentence_id) FROM (
            SELECT DISTINCT ON (e.simple_sentence_id, e.complex_sentence_id) e.simple_sentence_id, e.new_label
            FROM {LabelEvent._meta.db_table} e
            WHERE e.project_id = a.project_id AND e.annotator_id = a.annotator_id AND e.pair_id = a.pair_id
              AND e.source <> '{LabelEvent.Source.ADJUDICATION}'
            ORDER BY e.simple_sentence_id, e.complex_sentence_id, e.id DESC
        ) latest WHERE latest.new_label <> ''),
      labelled_ever = (
        SELECT count(*) FROM {LabelEvent._meta.db_table} e
        WHERE e.project_id = a.project_id AND e.annotator_id = a.annotator_id AND e.pair_id = a.pair_id
          AND e.previous_id IS NULL AND e.source <> '{LabelEvent.Source.ADJUDICATION}'),
      queue_run_id = p.suggestion_run_id,
      (queue_open, queue_uncertainty, queue_uncertainty_first, queue_disagreement, queue_disagreement_first) = (
        SELECT count(*), min(abs(c.crf_marginal - 0.5)), (array_agg(c.id ORDER BY abs(c.crf_marginal - 0.5), c.id))[1],
               max(c.disagreement), (array_agg(c.id ORDER BY c.disagreement DESC, c.id))[1]
        FROM {CandidateAlignment._meta.db_table} c
        LEFT JOIN (
            SELECT DISTINCT ON (e.simple_sentence_id, e.complex_sentence_id) e.simple_sentence_id, e.complex_sentence_id,
                   e.new_label
            FROM {LabelEvent._meta.db_table} e
            WHERE e.project_id = a.project_id AND e.annotator_id = a.annotator_id AND e.pair_id = a.pair_id
              AND e.source <> '{LabelEvent.Source.ADJUDICATION}'
            ORDER BY e.simple_sentence_id, e.complex_sentence_id, e.id DESC
        ) latest ON latest.simple_sentence_id = c.simple_sentence_id AND latest.complex_sentence_id = c.complex_sentence_id
        WHERE c.run_id = p.suggestion_run_id AND c.pair_id = a.pair_id AND coalesce(latest.new_label, '') = ''
          AND NOT EXISTS (
            SELECT 1 FROM {GoldItem._meta.db_table} g WHERE g.project_id = a.project_id
              AND g.simple_sentence_id = c.simple_sentence_id AND g.complex_sentence_id = c.complex_sentence_id)
          AND NOT EXISTS (
            SELECT 1 FROM {ItemEvent._meta.db_table} k
            WHERE k.project_id = a.project_id AND k.annotator_id = a.annotator_id AND k.pair_id = a.pair_id
              AND k.kind = '{ItemEvent.Kind.SKIP}'
              AND k.simple_sentence_id = c.simple_sentence_id AND k.complex_sentence_id = c.complex_sentence_id
              AND NOT EXISTS (SELECT 1 FROM {ItemEvent._meta.db_table} u WHERE u.undoes_id = k.id)))
    FROM {AnnotationProject._meta.db_table} p
    WHERE p.id = a.project_id AND a.project_id = %(project)s AND (%(pairs)s::integer[] IS NULL OR a.pair_id = ANY(%(pairs)s))
      AND (%(annotator)s::integer IS NULL OR a.annotator_id = %(annotator)s)
"""


def assignments_recount(project: AnnotationProject, *, pair_ids: Sequence[int] | None = None, annotator_id: int | None = None) -> None:
    """Recount the figures kept on the project's assignments (of ``pair_ids`` and ``annotator_id`` when given) from
    their rows: call after writing label events, skips or test items or making assignments, in the same transaction."""
    params = {"project": project.pk, "pairs": list(pair_ids) if pair_ids is not None else None, "annotator": annotator_id}
    with connection.cursor() as cursor:
        cursor.execute(_ASSIGNMENT_COUNTS_SQL, params)


# --- the write guard -----------------------------------------------------------------------------


def _not_assigned(annotator: AbstractBaseUser, pair: DocumentPair, project: AnnotationProject) -> PermissionError:
    return PermissionError(f"{annotator} is not assigned document pair {pair.pk} in project {project.name!r}")


def assignment_lock(project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair) -> Assignment:
    """Lock the annotator's assignment of ``pair`` (call inside a transaction): writes on one pair queue up behind it."""
    assignment = Assignment.objects.select_for_update().filter(project=project, annotator=annotator, pair=pair).first()
    if assignment is None:
        raise _not_assigned(annotator, pair, project)
    return assignment


def _sentence_refusal(pair: DocumentPair, side: str, sentence_id: int) -> ValueError:
    if Sentence.all_objects.filter(pk=sentence_id, retired_by__isnull=False).exists():
        return ValueError(f"sentence {sentence_id} was split or merged by a sentence edit; reload the page to label the new sentences")
    return ValueError(f"sentence {sentence_id} is not a sentence of the {side} document of pair {pair.pk}")


def sentences_check(pair: DocumentPair, simple_sentence_id: int, complex_sentence_id: int) -> None:
    """ValueError naming the sentence when either is not a sentence of its side of ``pair``."""
    sentences = dict(Sentence.objects.filter(pk__in=[simple_sentence_id, complex_sentence_id]).values_list("pk", "document_id"))
    if sentences.get(simple_sentence_id) != pair.simple_document_id:
        raise _sentence_refusal(pair, "simple", simple_sentence_id)
    if sentences.get(complex_sentence_id) != pair.complex_document_id:
        raise _sentence_refusal(pair, "complex", complex_sentence_id)


def write_guard_orm(
    project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, simple_id: int, complex_id: int
) -> LabelEvent | None:
    """The write guard with the ORM: lock, check the sentences, read the latest own event. In a transaction."""
    assignment_lock(project, annotator, pair)
    sentences_check(pair, simple_id, complex_id)
    return latest_event(project, annotator, simple_id, complex_id)


# Two statements, not one: under READ COMMITTED a statement reads one snapshot, taken before it
# waits for the row lock, so a latest-event read in the locking statement misses the event the
# lock holder just committed (two first labels were both accepted). The second statement's
# snapshot is taken after the lock is granted: it also sees a sentence edit that held the lock
# (annotation.labelling.segmentation locks the assignments too) and retired the sentence.
_WRITE_LOCK_SQL = f"""
    SELECT a.id FROM {Assignment._meta.db_table} a
    WHERE a.project_id = %(project)s AND a.pair_id = %(pair)s AND a.annotator_id = %(annotator)s
    FOR UPDATE OF a
"""
_LATEST_EVENT_SQL = f"""
    SELECT
        (SELECT document_id FROM {Sentence._meta.db_table} WHERE id = %(simple)s AND retired_by_id IS NULL),
        (SELECT document_id FROM {Sentence._meta.db_table} WHERE id = %(complex)s AND retired_by_id IS NULL),
        latest.id, latest.new_label
    FROM (SELECT 1) one LEFT JOIN (
        SELECT id, new_label FROM {LabelEvent._meta.db_table}
        WHERE project_id = %(project)s AND annotator_id = %(annotator)s
          AND simple_sentence_id = %(simple)s AND complex_sentence_id = %(complex)s AND source <> '{LabelEvent.Source.ADJUDICATION}'
        ORDER BY id DESC LIMIT 1
    ) latest ON true
"""


def write_guard(
    project: AnnotationProject, annotator: AbstractBaseUser, pair: DocumentPair, simple_id: int, complex_id: int
) -> LabelEvent | None:
    """:func:`write_guard_orm` in two small queries (a label save is the hottest write); call inside a transaction.

    Same checks, errors and answer; the latest event comes back as an unsaved stand-in with only
    its id and label, which is all a write reads.
    """
    params = {"simple": simple_id, "complex": complex_id, "project": project.pk, "pair": pair.pk, "annotator": annotator.pk}
    with connection.cursor() as cursor:
        cursor.execute(_WRITE_LOCK_SQL, params)
        if cursor.fetchone() is None:
            raise _not_assigned(annotator, pair, project)
        cursor.execute(_LATEST_EVENT_SQL, params)
        simple_document, complex_document, latest_id, latest_label = cursor.fetchone()
    if simple_document != pair.simple_document_id:
        raise _sentence_refusal(pair, "simple", simple_id)
    if complex_document != pair.complex_document_id:
        raise _sentence_refusal(pair, "complex", complex_id)
    if latest_id is None:
        return None
    return LabelEvent(pk=latest_id, new_label=latest_label)
