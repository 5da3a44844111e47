"""Reads for annotation: what a user may see, and progress. Labels are derived in :mod:`annotation.labels`."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.http import Http404

from alignment.selectors import corpora_visible_to
from annotation.labels import latest_label_events
from annotation.models import AnnotationProject, Assignment, ProjectMembership


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


def project_progress(project: AnnotationProject) -> list[dict]:
    """Per assignment: simple sentences with a current label (any pair labelled, undone ones not) / all, done flag.

    One DISTINCT ON query gives every annotator's latest event per sentence pair in the project.
    """
    from django.db.models import Count

    latest = latest_label_events(project).values_list("annotator_id", "pair_id", "simple_sentence_id", "new_label")
    labelled: dict[tuple[int, int], set[int]] = {}
    for annotator_id, pair_id, simple_id, label in latest:
        if label:
            labelled.setdefault((annotator_id, pair_id), set()).add(simple_id)
    rows = (
        Assignment.objects.filter(project=project)
        .select_related("pair__complex_document", "pair__simple_document", "annotator")
        .annotate(simple_total=Count("pair__simple_document__sentences"))
        .order_by("pair__complex_document__external_id", "pair__simple_document__level", "annotator__username")
    )
    progress = []
    for row in rows:
        touched = len(labelled.get((row.annotator_id, row.pair_id), ()))
        percent = round(100 * touched / row.simple_total) if row.simple_total else 0
        progress.append({"assignment": row, "touched": touched, "total": row.simple_total, "percent": percent})
    return progress
