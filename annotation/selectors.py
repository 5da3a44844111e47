"""Reads for annotation: what a user may see, and progress. Labels are derived in :mod:`annotation.labels`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.http import Http404

from alignment.selectors import corpora_visible_to, sentence_count
from annotation.labels import latest_label_events
from annotation.models import AnnotationProject, Assignment, LabelEvent, ProjectMembership


def projects_with_role(user: AbstractBaseUser) -> QuerySet[AnnotationProject]:
    """Projects annotated with ``role``: the user's role in each (staff are managers everywhere).

    Only projects where the user has a role are included; the role comes in the same query.
    """
    if not user.is_authenticated:
        return AnnotationProject.objects.none()
    if user.is_staff:
        return AnnotationProject.objects.annotate(role=Value(ProjectMembership.Role.MANAGER.value))
    own_role = ProjectMembership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    return AnnotationProject.objects.annotate(role=Subquery(own_role)).filter(role__isnull=False)


def project_get_for_user(user: AbstractBaseUser, project_id: int) -> tuple[AnnotationProject, str]:
    """The project and the user's role in it; 404 for anyone without a role (no existence leak)."""
    project = projects_with_role(user).filter(pk=project_id).select_related("corpus", "suggestion_run").first()
    if project is None:
        raise Http404("no such project")
    return project, project.role


def project_name_refusal(user: AbstractBaseUser | None, name: str) -> str | None:
    """Why ``user`` cannot give a new project the name ``name``, or None when it is free.

    Names are unique across all users. For a project where the user has no role, the message says
    only that the name is not available: it never confirms that a private project is so called.
    """
    if not AnnotationProject.objects.filter(name=name).exists():
        return None
    if user is not None and projects_with_role(user).filter(name=name).exists():
        return f"a project called {name!r} exists already"
    return f"the name {name!r} is not available; choose another name"


def assignment_get_for_user(user: AbstractBaseUser, project: AnnotationProject, pair_id: int) -> Assignment:
    """The user's own assignment of a pair; 404 when the pair is not theirs (annotators see only their work)."""
    assignment = (
        Assignment.objects.filter(project=project, annotator=user, pair_id=pair_id)
        .select_related("pair__complex_document", "pair__simple_document")
        .first()
    )
    if assignment is None:
        raise Http404("no such assignment")
    return assignment


def corpora_for_projects(user: AbstractBaseUser):
    """Corpora the user may build a project on: their own, all of them for staff."""
    from alignment.models import Corpus

    return Corpus.objects.all() if user.is_staff else Corpus.objects.filter(owner=user)


def corpus_visible(user, project: AnnotationProject) -> bool:
    """Whether ``user`` may open the project's corpus and its runs (a project role alone does not grant it)."""
    return corpora_visible_to(user).filter(pk=project.corpus_id).exists()


@dataclass(frozen=True)
class ProgressTotals:
    """A project's (or one annotator's) assignments, and simple sentences labelled of all their simple sentences."""

    assignments: int
    touched: int
    total: int


def _assignments(project: AnnotationProject, annotator: AbstractBaseUser | None) -> QuerySet[Assignment]:
    assignments = Assignment.objects.filter(project=project)
    return assignments if annotator is None else assignments.filter(annotator=annotator)


def project_progress_totals(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None) -> ProgressTotals:
    """Over every assignment (``annotator``'s only, when given), in two queries: the simple sentences with a current
    label (any complex sentence, undone ones not) summed over the assignments, and all their simple sentences."""
    figures = (
        _assignments(project, annotator)
        .annotate(simple_total=sentence_count("pair__simple_document"))
        .aggregate(assignments=Count("pk"), total=Coalesce(Sum("simple_total"), 0))
    )
    latest = latest_label_events(project, **({"annotator": annotator} if annotator is not None else {})).values("pk")
    assigned = Assignment.objects.filter(project=project, annotator=OuterRef("annotator"), pair=OuterRef("pair"))
    touched = (
        LabelEvent.objects.filter(pk__in=latest)
        .exclude(new_label="")
        .filter(Exists(assigned))
        .values("annotator_id", "pair_id", "simple_sentence_id")
        .distinct()
        .count()
    )
    return ProgressTotals(figures["assignments"], touched, figures["total"])


def project_progress_rows(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None) -> QuerySet[Assignment]:
    """Every assignment (``annotator``'s only, when given) in the project page's order, with ``simple_total``; a page of
    them gets its labelled counts from :func:`project_progress`."""
    return (
        _assignments(project, annotator)
        .select_related("pair__complex_document", "pair__simple_document", "annotator")
        .annotate(simple_total=sentence_count("pair__simple_document"))
        .order_by("pair__complex_document__external_id", "pair__simple_document__level", "annotator__username", "pk")
    )


def project_progress(project: AnnotationProject, assignments: Iterable[Assignment]) -> list[dict]:
    """Per assignment of ``assignments`` (from :func:`project_progress_rows`): simple sentences with a current label
    (any pair labelled, undone ones not) / all, percent. One DISTINCT ON query for all of them."""
    assignments = list(assignments)
    keys = {(a.annotator_id, a.pair_id) for a in assignments}
    latest = latest_label_events(project, annotator_id__in={a for a, _ in keys}, pair_id__in={p for _, p in keys}).values_list(
        "annotator_id", "pair_id", "simple_sentence_id", "new_label"
    )
    labelled: dict[tuple[int, int], set[int]] = {}
    for annotator_id, pair_id, simple_id, label in latest:
        if label and (annotator_id, pair_id) in keys:
            labelled.setdefault((annotator_id, pair_id), set()).add(simple_id)
    progress = []
    for row in assignments:
        touched = len(labelled.get((row.annotator_id, row.pair_id), ()))
        percent = round(100 * touched / row.simple_total) if row.simple_total else 0
        progress.append({"assignment": row, "touched": touched, "total": row.simple_total, "percent": percent})
    return progress
