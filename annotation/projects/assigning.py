"""Giving document pairs to annotators: every pair of a project to ``overlap`` annotators (a large project's in the
background, after a manager's press), or one pair to one.

Re-exported by :mod:`annotation.services`, where callers find them.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from alignment.copying import copy_rows
from alignment.jobs.enqueue import defer_unless_waiting, stop_asked, stop_waiting_or_running, waiting_or_running
from alignment.jobs.slices import TimeSlice
from alignment.models import DocumentPair
from annotation import labels
from annotation.models import AnnotationProject, Assignment, ProjectMembership
from annotation.selectors import figures_warm

logger = logging.getLogger(__name__)

DISTRIBUTE_CHUNK = 2_000  # pairs read, given out, written and recounted at a time: four statements, whatever the project's size


def assignments_distribute(*, project: AnnotationProject) -> int:
    """Give every pair of the project to ``overlap`` annotators, least-loaded first; returns new assignments.

    Idempotent: pairs that already have enough annotators are left alone. The pairs go in order of their ids, each to
    the annotators it lacks with the fewest assignments so far (the lower user id on a tie), as one pair at a time
    did; but read, given out and written ``DISTRIBUTE_CHUNK`` pairs at a time. Two statements a pair made a
    10,000-pair project's press tens of thousands of statements in one request. The project's row is locked first, so
    two presses at once give each pair out once: the second finds the first's assignments. One transaction: a
    request gives all or nothing (a large project's background job commits chunk by chunk instead).
    """
    annotators = _annotators(project)
    with transaction.atomic():
        _project_locked(project.pk)
        load = _loads(project, annotators)
        created = sum(_chunk_give(project, chunk, load) for chunk in _pair_chunks(project.pk))
        figures_warm(project, items=created)
    return created


def _pair_chunks(project_id: int, after: int = 0) -> Iterator[list[int]]:
    """The project's pair ids after ``after``, in order, ``DISTRIBUTE_CHUNK`` at a time, each chunk read when wanted."""
    project_pairs = AnnotationProject.pairs.through.objects.filter(annotationproject_id=project_id)
    # The next chunk by the through table's own (project, pair) index: through a join with the pairs, PostgreSQL
    # planned each chunk as a scan of every pair before it (1 to 3 s a chunk at 10,000 pairs, a scratch timing).
    while chunk := list(
        project_pairs.filter(documentpair_id__gt=after)
        .order_by("documentpair_id")
        .values_list("documentpair_id", flat=True)[:DISTRIBUTE_CHUNK]
    ):
        after = chunk[-1]
        yield chunk


def _chunk_give(project: AnnotationProject, chunk: list[int], load: dict[int, int]) -> int:
    """Give the chunk's pairs out (:func:`_given_out`), write them by ``COPY`` and recount their labels; the count."""
    new = _given_out(project, chunk, load)
    now = timezone.now()
    copy_rows(Assignment, ASSIGNMENT_COLUMNS, ((project.pk, pair_id, user_id, now, 0, 0, 0) for pair_id, user_id in new))
    if new:  # an annotator given a pair back finds the labels they made before
        labels.assignments_recount(project, pair_ids=sorted({pair_id for pair_id, _ in new}))
    return len(new)


def _project_locked(project_id: int) -> AnnotationProject | None:
    """The project's row, locked until the transaction ends (None when it was deleted)."""
    return AnnotationProject.objects.select_for_update().filter(pk=project_id).first()


def _loads(project: AnnotationProject, annotators: list[int]) -> dict[int, int]:
    """Each annotator's assignments in the project, in one grouped query."""
    counts = Assignment.objects.filter(project=project, annotator_id__in=annotators).values_list("annotator_id").annotate(n=Count("pk"))
    return {user_id: 0 for user_id in annotators} | dict(counts.order_by())


ASSIGN_TASK = "annotation.assignments_distribute"


def assignments_distribute_press(*, project: AnnotationProject) -> int | None:
    """A manager's *Assign* press: the pairs given out now (:func:`assignments_distribute`, the new assignments' count),
    or, for a project of more than ``ASSIGN_INLINE_MAX_PAIRS`` pairs, in the background (None): a press while one
    waits queues nothing more. A project without annotators is refused either way, before anything is queued."""
    if project.pairs.count() <= settings.ASSIGN_INLINE_MAX_PAIRS:
        return assignments_distribute(project=project)
    _annotators(project)
    defer_unless_waiting(ASSIGN_TASK, _assign_lock(project.pk), project_id=project.pk)
    return None


def assigning_in_background(project: AnnotationProject) -> bool:
    """Whether a background job is giving the project's pairs out, or waits to."""
    return waiting_or_running(_assign_lock(project.pk))


def assignments_made(project: AnnotationProject) -> int:
    """The project's assignments so far, for the background job's note (one count by the project's unique index)."""
    return Assignment.objects.filter(project=project).count()


def assignments_distribute_stop(*, project: AnnotationProject) -> int | None:
    """A manager's *Stop assigning* press: the project's background job is cancelled if it waits, and stops before its
    next chunk if it runs. The chunks it committed keep their assignments, and the next *Assign* press gives out the
    rest. The project's pairs given out so far (final: the job gives nothing more), or None when no job was there."""
    with transaction.atomic():
        _project_locked(project.pk)  # after the chunk under way commits: the continuation it may defer is cancelled too
        if not stop_waiting_or_running(_assign_lock(project.pk)):
            return None
        return Assignment.objects.filter(project=project).values("pair_id").distinct().count()


def assignments_distribute_later(*, project_id: int, after: int = 0, time_slice: TimeSlice | None = None) -> None:
    """The background task's work: the project's pairs after ``after`` given out as :func:`assignments_distribute`
    gives them, but each chunk committed in its own transaction, so that the worker and the project's row are held
    for a chunk at a time (about 0.3 s), not for a whole 100,000-pair project. Once ``time_slice`` has run out the
    rest is a continuation, deferred in the last chunk's transaction: other work queued meanwhile runs first. A
    project deleted meanwhile, or a manager's stop (:func:`assignments_distribute_stop`), ends the job at its next
    chunk; one whose annotators all left is logged and left as it is.
    """
    created, project, load = 0, None, None
    for chunk in _pair_chunks(project_id, after):
        with transaction.atomic():
            project = _project_locked(project_id)
            if project is None:
                return
            if stop_asked(_assign_lock(project_id)):  # read under the project's lock, which a stop takes too
                logger.info("assigning project %s in the background: stopped by a manager before pair %s", project_id, chunk[0])
                break
            if load is None:  # the slice's annotators and their loads: read once, then kept up to date as pairs are given
                try:
                    annotators = _annotators(project)
                except ValueError as error:
                    logger.warning("assigning project %s in the background: %s", project_id, error)
                    return
                load = _loads(project, annotators)
            created += _chunk_give(project, chunk, load)
            if time_slice is not None and time_slice.over() and len(chunk) == DISTRIBUTE_CHUNK:
                defer_unless_waiting(ASSIGN_TASK, _assign_lock(project_id), in_transaction=True, project_id=project_id, after=chunk[-1])
                break
    if project is not None:
        figures_warm(project, items=created)


def _assign_lock(project_id: int) -> str:
    """The Procrastinate lock and queueing lock of a project's background assigning: one runs, one waits at most."""
    return f"assign-{project_id}"


def _annotators(project: AnnotationProject) -> list[int]:
    """The project's annotators' user ids; ValueError naming the project when it has none."""
    annotators = list(
        ProjectMembership.objects.filter(project=project, role=ProjectMembership.Role.ANNOTATOR).values_list("user_id", flat=True)
    )
    if not annotators:
        raise ValueError(f"project {project.name!r} has no annotators to assign work to")
    return annotators


# What a new assignment's row holds, written by COPY: the ORM built a 10,000-pair press's 20,000 rows' INSERT in Python
# for longer than PostgreSQL took to write them. The columns left out are empty (NULL) until the recount fills them.
ASSIGNMENT_COLUMNS = ("project_id", "pair_id", "annotator_id", "created_at", "labelled", "labelled_ever", "queue_open")


def _given_out(project: AnnotationProject, pair_ids: list[int], load: dict[int, int]) -> list[tuple[int, int]]:
    """The new assignments ``(pair, annotator)`` of ``pair_ids`` (in order) to the annotators each lacks, least-loaded
    first; ``load`` (each annotator's assignments in the project) is updated as they are given."""
    have: dict[int, set[int]] = defaultdict(set)  # a pair's annotators, whatever their role now
    for pair_id, annotator_id in Assignment.objects.filter(project=project, pair_id__in=pair_ids).values_list("pair_id", "annotator_id"):
        have[pair_id].add(annotator_id)
    new = []
    for pair_id in pair_ids:
        lacking = project.overlap - len(have[pair_id])
        if lacking <= 0:
            continue
        for user_id in sorted((u for u in load if u not in have[pair_id]), key=lambda u: (load[u], u))[:lacking]:
            new.append((pair_id, user_id))
            load[user_id] += 1
    return new


def assignment_create(*, project: AnnotationProject, pair: DocumentPair, annotator: AbstractBaseUser) -> Assignment:
    """Give one pair to one annotator (the page distributes them all: :func:`assignments_distribute`); callers check
    the pair and the role. A pair given back finds the labels the annotator made before."""
    with transaction.atomic():
        assignment = Assignment.objects.create(project=project, pair=pair, annotator=annotator)
        labels.assignments_recount(project, pair_ids=[pair.pk], annotator_id=annotator.pk)
    assignment.refresh_from_db(fields=["labelled"])
    return assignment
