"""Giving document pairs to annotators: every pair of a project to ``overlap`` annotators, or one pair to one.

Both are re-exported by :mod:`annotation.services`, where callers find them.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from alignment.models import DocumentPair
from annotation import labels
from annotation.models import AnnotationProject, Assignment, ProjectMembership
from annotation.selectors import figures_warm


def assignments_distribute(*, project: AnnotationProject) -> int:
    """Give every pair of the project to ``overlap`` annotators, least-loaded first; returns new assignments.

    Idempotent: pairs that already have enough annotators are left alone.
    """
    annotators = list(ProjectMembership.objects.filter(project=project, role=ProjectMembership.Role.ANNOTATOR).select_related("user"))
    if not annotators:
        raise ValueError(f"project {project.name!r} has no annotators to assign work to")
    load = {m.user_id: Assignment.objects.filter(project=project, annotator_id=m.user_id).count() for m in annotators}
    created, given = 0, set()
    with transaction.atomic():
        for pair in project.pairs.order_by("pk"):
            have = set(Assignment.objects.filter(project=project, pair=pair).values_list("annotator_id", flat=True))
            for user_id in sorted((u for u in load if u not in have), key=lambda u: (load[u], u)):
                if len(have) >= project.overlap:
                    break
                Assignment.objects.create(project=project, pair=pair, annotator_id=user_id)
                have.add(user_id)
                load[user_id] += 1
                created += 1
                given.add(pair.pk)
        if given:  # an annotator given a pair back finds the labels they made before
            labels.assignments_recount(project, pair_ids=sorted(given))
        figures_warm(project, items=created)
    return created


def assignment_create(*, project: AnnotationProject, pair: DocumentPair, annotator: AbstractBaseUser) -> Assignment:
    """Give one pair to one annotator (the page distributes them all: :func:`assignments_distribute`); callers check
    the pair and the role. A pair given back finds the labels the annotator made before."""
    with transaction.atomic():
        assignment = Assignment.objects.create(project=project, pair=pair, annotator=annotator)
        labels.assignments_recount(project, pair_ids=[pair.pk], annotator_id=annotator.pk)
    assignment.refresh_from_db(fields=["labelled"])
    return assignment
