"""Giving document pairs to annotators: every pair of a project to ``overlap`` annotators (a large project's in the
background, after a manager's press), or one pair to one.

Re-exported by :mod:`annotation.services`, where callers find them.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from alignment.copying import copy_rows
from alignment.jobs.enqueue import defer_unless_waiting, waiting_or_running
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
    two presses at once give each pair out once: the second finds the first's assignments.
    """
    annotators = _annotators(project)
    created = 0
    with transaction.atomic():
        AnnotationProject.objects.select_for_update().filter(pk=project.pk).exists()
        counts = Assignment.objects.filter(project=project, annotator_id__in=annotators).values_list("annotator_id").annotate(n=Count("pk"))
        load = {user_id: 0 for user_id in annotators} | dict(counts.order_by())
        last, project_pairs = 0, AnnotationProject.pairs.through.objects.filter(annotationproject_id=project.pk)
        # The next chunk by the through table's own (project, pair) index: through a join with the pairs, PostgreSQL
        # planned each chunk as a scan of every pair before it (1 to 3 s a chunk at 10,000 pairs, a scratch timing).
        while chunk := list(
            project_pairs.filter(documentpair_id__gt=last)
            .order_by("documentpair_id")
            .values_list("documentpair_id", flat=True)[:DISTRIBUTE_CHUNK]
        ):
            last = chunk[-1]
            new = _given_out(project, chunk, load)
            now = timezone.now()
            copy_rows(Assignment, ASSIGNMENT_COLUMNS, ((project.pk, pair_id, user_id, now, 0, 0, 0) for pair_id, user_id in new))
            created += len(new)
            if new:  # an annotator given a pair back finds the labels they made before
                labels.assignments_recount(project, pair_ids=sorted({pair_id for pair_id, _ in new}))
        figures_warm(project, items=created)
    return created


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


def assignments_distribute_later(*, project_id: int) -> None:
    """The background task's work: the project's pairs given out (a project deleted meanwhile has none; one whose
    annotators all left meanwhile is logged and left as it is)."""
    project = AnnotationProject.objects.filter(pk=project_id).first()
    if project is None:
        return
    try:
        assignments_distribute(project=project)
    except ValueError as error:
        logger.warning("assigning project %s in the background: %s", project_id, error)


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
