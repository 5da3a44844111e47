"""Reads for annotation: what a user may see, and progress. Labels are derived in :mod:`annotation.labels`."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import caches
from django.core.signals import request_started
from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.dispatch import receiver
from django.http import Http404
from django.utils.module_loading import import_string

from alignment.jobs.enqueue import defer_unless_waiting
from alignment.paging import in_order
from alignment.selectors import corpora_visible_to, sentence_count
from annotation.models import AnnotationProject, Assignment, ProjectMembership

T = TypeVar("T")


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


def assignment_find(user: AbstractBaseUser, project: AnnotationProject, pair_id: int) -> Assignment | None:
    """The user's own assignment of a pair, or None."""
    return (
        Assignment.objects.filter(project=project, annotator=user, pair_id=pair_id)
        .select_related("pair__complex_document", "pair__simple_document")
        .first()
    )


def assignment_get_for_user(user: AbstractBaseUser, project: AnnotationProject, pair_id: int) -> Assignment:
    """The user's own assignment of a pair; 404 when the pair is not theirs (annotators see only their work)."""
    assignment = assignment_find(user, project, pair_id)
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


# The project page's totals in one statement: the assignments, their simple sentences, and of those the ones with a current
# label (``Assignment.labelled``, kept from the label events).
_PROGRESS_TOTALS_SQL = """
    SELECT count(*), coalesce(sum((SELECT count(*) FROM alignment_sentence s WHERE s.document_id = p.simple_document_id AND s.retired_by_id IS NULL)), 0),
           coalesce(sum(a.labelled), 0)
    FROM annotation_assignment a JOIN alignment_documentpair p ON p.id = a.pair_id
    WHERE a.project_id = %(project)s AND (%(annotator)s::integer IS NULL OR a.annotator_id = %(annotator)s)
"""


def project_progress_totals(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None) -> ProgressTotals:
    """Over every assignment (``annotator``'s only, when given), in one query: the simple sentences with a current label
    (any complex sentence, undone ones not) summed over the assignments, and all their simple sentences."""
    with connection.cursor() as cursor:
        cursor.execute(_PROGRESS_TOTALS_SQL, {"project": project.pk, "annotator": annotator.pk if annotator is not None else None})
        assignments, total, touched = cursor.fetchone()
    return ProgressTotals(assignments, touched, total)


PROGRESS_ORDER = ("pair__complex_document__external_id", "pair__simple_document__level", "annotator__username", "pk")


def project_progress_ids(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None) -> QuerySet[int]:
    """The ids of every assignment (``annotator``'s only, when given) in the project page's order; a page of them gets
    its rows and figures from :func:`project_progress`."""
    return _assignments(project, annotator).order_by(*PROGRESS_ORDER).values_list("pk", flat=True)


def project_progress(project: AnnotationProject, assignment_ids: Iterable[int]) -> list[dict]:
    """Per assignment of ``assignment_ids``, in that order: simple sentences with a current label (any pair labelled,
    undone ones not: ``Assignment.labelled``) / all, percent. One query for all of them."""
    rows = Assignment.objects.select_related("pair__complex_document", "pair__simple_document", "annotator").annotate(
        simple_total=sentence_count("pair__simple_document")
    )
    progress = []
    for row in in_order(rows, list(assignment_ids)):
        percent = round(100 * row.labelled / row.simple_total) if row.simple_total else 0
        progress.append({"assignment": row, "touched": row.labelled, "total": row.simple_total, "percent": percent})
    return progress


# A version of a project's annotation state, cheap to read: label events, test answers and verifications are only ever
# added (their counts, and the label events' latest id, are versions), training snapshots too (their sticky splits); assignments may be added, removed, given to someone else or marked done (and undone); pairs
# added or removed; members added, removed, given another role or renamed.
_STATE_SQL = """
    SELECT concat_ws(';',
        (SELECT max(id) FROM annotation_labelevent WHERE project_id = %(project)s),  -- by the (project, id) index
        (SELECT concat_ws('/', count(*), sum(id), sum(annotator_id), sum(extract(epoch FROM completed_at)))
         FROM annotation_assignment WHERE project_id = %(project)s),
        (SELECT concat_ws('/', count(*), sum(documentpair_id)) FROM annotation_annotationproject_pairs WHERE annotationproject_id = %(project)s),
        (SELECT string_agg(concat_ws('/', m.user_id, m.role, u.{username}), ',' ORDER BY m.user_id)
         FROM annotation_projectmembership m JOIN {users} u ON u.id = m.user_id WHERE m.project_id = %(project)s),
        (SELECT count(*) FROM annotation_goldanswer g JOIN annotation_golditem i ON i.id = g.gold_item_id WHERE i.project_id = %(project)s),
        (SELECT count(*) FROM annotation_golditem WHERE project_id = %(project)s),
        (SELECT count(*) FROM annotation_pairverification WHERE project_id = %(project)s),
        (SELECT max(id) FROM annotation_trainingsnapshot WHERE project_id = %(project)s))
"""
# Kept while the project is as it was, whatever the time: each read checks the version, so age alone changes nothing, and
# a large project's figures counted again after an hour cost the manager coming back 1-8 s (10,000 pairs). The
# cache's MAX_ENTRIES bounds what is kept.
PROJECT_CACHE_SECONDS = 30 * 24 * 3600
RECOUNT_TASK = "annotation.project_figures_refresh"

# When the oldest figures this request served from before the project's last change were counted (None: all current).
_served_stale: ContextVar[float | None] = ContextVar("served_stale", default=None)


@receiver(request_started)
def figures_age_reset(**_kwargs: object) -> None:
    """Forget what the last request served (each request starts with current figures)."""
    _served_stale.set(None)


def figures_served_as_of() -> float | None:
    """When the oldest figures this request served from before the project's last change were counted (a Unix time),
    or None when every figure it served is current: the page says so (annotation.context_processors)."""
    return _served_stale.get()


def project_cached(
    project: AnnotationProject,
    name: str,
    compute: Callable[[], T],
    *,
    extra: object = (),
    recount: str = "",
    arg: int | None = None,
    fresh: bool = False,
) -> T:
    """``compute()``, kept in the cache while the project's labels, assignments, pairs, members, test items and settings
    stay as they are: figures over every label of a large project, read again when a page is opened again or paged
    through, for one small query. ``extra`` is who they are for or what else they depend on (a change counts anew).

    After the project changes, figures that took longer than PROJECT_FIGURES_INLINE_MS are not counted again in the
    request: it gets the last ones (:func:`figures_served_as_of` says since when) and the background task counts them
    by calling ``recount`` (the dotted path of a function of the project and ``arg``, which calls this with ``fresh``),
    queued once however many requests ask. Without ``recount`` they are always counted in the request.
    """
    users = get_user_model()._meta
    sql = _STATE_SQL.format(username=users.get_field(get_user_model().USERNAME_FIELD).column, users=users.db_table)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"project": project.pk})
        (state,) = cursor.fetchone()
    settings_ = (project.overlap, project.accuracy_threshold, project.exclude_flagged, project.adjudicate_all, project.suggestion_run_id)
    version = hashlib.sha256(repr((state, settings_)).encode()).hexdigest()
    key = f"project:{project.pk}:{project.created_at.timestamp()}:{name}:{hashlib.sha256(repr(extra).encode()).hexdigest()}"
    figures = caches["figures"]  # shared by the host's web processes (settings.CACHES)
    entry = None if fresh else figures.get(key)
    if entry is not None and entry["version"] == version:
        return entry["value"]
    if entry is not None and recount and 1000 * entry["seconds"] > settings.PROJECT_FIGURES_INLINE_MS:
        served = _served_stale.get()
        _served_stale.set(entry["at"] if served is None else min(served, entry["at"]))
        lock = f"figures-{hashlib.sha256(key.encode()).hexdigest()[:32]}"  # one recount of these figures waits at most
        defer_unless_waiting(RECOUNT_TASK, lock, project_id=project.pk, recount=recount, arg=arg)
        return entry["value"]
    started = time.perf_counter()
    value = compute()
    entry = {"version": version, "value": value, "at": time.time(), "seconds": time.perf_counter() - started}
    figures.set(key, entry, PROJECT_CACHE_SECONDS)
    return value


# The manager's figures a bulk load warms: the project page's summary, the agreement dashboard, the training preview.
WARMED_FIGURES = (
    "annotation.projects.summary.summary_recount",
    "annotation.adjudication.agreement_sql.agreement_recount",
    "annotation.training.views.preview_recount",
)


def figures_warm(project: AnnotationProject, *, items: int) -> None:
    """After a bulk load of ``items`` rows (assignments given, gold labels imported), queue the background recount of
    the manager's figures (:data:`WARMED_FIGURES`), so that the first view of a large project's pages reads them from
    the cache instead of counting them in the request (0.8-8 s at 10,000 pairs). Below PROJECT_FIGURES_WARM_MIN_ITEMS
    nothing is queued: such figures are counted in the request in well under a second."""
    if items < settings.PROJECT_FIGURES_WARM_MIN_ITEMS:
        return
    for recount in WARMED_FIGURES:
        defer_unless_waiting(
            RECOUNT_TASK, f"figures-warm-{project.pk}-{recount.rsplit('.', 1)[1]}", project_id=project.pk, recount=recount, arg=None
        )


def project_figures_recount(*, project_id: int, recount: str, arg: int | None) -> None:
    """The background task's work: count a project's figures again through ``recount`` (an ``annotation`` function)."""
    if not recount.startswith("annotation."):
        raise ValueError(f"not a figures recount of the annotation app: {recount!r}")
    project = AnnotationProject.objects.filter(pk=project_id).first()
    if project is not None:  # a project deleted meanwhile has no figures to count
        import_string(recount)(project, arg)
