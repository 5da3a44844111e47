"""An annotator's task list: every document pair assigned to them, in every project, with its state.

States, in the order work moves through them: *not started* (no current label), *in progress*
(some simple sentences labelled), *done* (the annotator marked the pair done), *adjudicated*
(a reviewer set a final label on one of its sentence pairs, or verified the pair).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from annotation.models import AnnotationProject, Assignment, ProjectMembership

STATES = ("not started", "in progress", "done", "adjudicated")

# Each assignment of the annotator with its state, from the assignment's own columns (``labelled``: simple sentences with
# a current label) and the project's adjudications and verifications of its pairs: what My tasks counts and filters.
# The states' rules are the module docstring's.
_STATES_SQL = """
    WITH mine AS (
        SELECT a.id, a.project_id, a.pair_id, a.completed_at, a.labelled FROM annotation_assignment a
        WHERE a.annotator_id = %(user)s AND (%(ids)s::integer[] IS NULL OR a.id = ANY(%(ids)s))
    ), adjudicated AS (  -- read by the partial index label_event_adjudications
        SELECT DISTINCT e.project_id, e.pair_id FROM annotation_labelevent e
        WHERE e.project_id IN (SELECT project_id FROM mine) AND e.source = 'adjudication'
          AND EXISTS (SELECT 1 FROM mine WHERE mine.project_id = e.project_id AND mine.pair_id = e.pair_id)
    ), verified AS (
        SELECT latest.project_id, latest.pair_id FROM (
            SELECT DISTINCT ON (v.project_id, v.pair_id) v.project_id, v.pair_id, v.verified FROM annotation_pairverification v
            WHERE v.project_id IN (SELECT project_id FROM mine) ORDER BY v.project_id, v.pair_id, v.id DESC
        ) latest WHERE latest.verified
    )
    SELECT m.id, m.project_id, m.pair_id, CASE
        WHEN adjudicated.pair_id IS NOT NULL OR verified.pair_id IS NOT NULL THEN 'adjudicated'
        WHEN m.completed_at IS NOT NULL THEN 'done'
        WHEN m.labelled > 0 THEN 'in progress'
        ELSE 'not started' END AS state
    FROM mine m
    LEFT JOIN adjudicated ON adjudicated.project_id = m.project_id AND adjudicated.pair_id = m.pair_id
    LEFT JOIN verified ON verified.project_id = m.project_id AND verified.pair_id = m.pair_id
"""
_COUNTS_SQL = f"SELECT project_id, state, count(*) FROM ({_STATES_SQL}) task GROUP BY project_id, state"
# My tasks' order: newest project first, pairs in document order (the id breaks ties, so pages never overlap). With a
# state asked for, every assignment's state is read to filter them; without, only the page's.
_ORDER = """
    JOIN annotation_annotationproject project ON project.id = task.project_id
    JOIN alignment_documentpair pair ON pair.id = task.pair_id
    JOIN alignment_document complex ON complex.id = pair.complex_document_id
    JOIN alignment_document simple ON simple.id = pair.simple_document_id
    WHERE (%(project)s = 0 OR task.project_id = %(project)s) {state}
    ORDER BY project.created_at DESC, project.id, complex.external_id, simple.level, task.id
    LIMIT %(limit)s OFFSET %(offset)s
"""
_PAGE_OF_STATE_SQL = f"SELECT task.id, task.state FROM ({_STATES_SQL}) task " + _ORDER.format(state="AND task.state = %(state)s")
_PAGE_SQL = "SELECT task.id FROM annotation_assignment task " + _ORDER.format(state="AND task.annotator_id = %(user)s")
_PAGE_STATES_SQL = f"SELECT task.id, task.state FROM ({_STATES_SQL}) task"
# Labelled and all simple sentences of a few assignments (a page of them).
_PROGRESS_SQL = """
    SELECT a.id,
        (SELECT count(*) FROM alignment_sentence s JOIN alignment_documentpair p ON s.document_id = p.simple_document_id
         WHERE p.id = a.pair_id AND s.retired_by_id IS NULL),
        a.labelled
    FROM annotation_assignment a
    WHERE a.id = ANY(%s)
"""


@dataclass(frozen=True)
class Task:
    assignment: Assignment
    labelled: int
    total: int
    state: str

    @property
    def percent(self) -> int:
        return round(100 * self.labelled / self.total) if self.total else 0


def task_counts(user: AbstractBaseUser) -> dict[int, dict[str, int]]:
    """Project id -> state -> the user's assignments in that state (states with none left out), in one query."""
    counts: dict[int, dict[str, int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_COUNTS_SQL, {"user": user.pk, "ids": None})
        for project_id, state, count in cursor.fetchall():
            counts.setdefault(project_id, {})[state] = count
    return counts


class TaskRows:
    """The user's tasks in ``state`` (every state: "") of ``project_id`` (every project: 0), in My tasks' order, as a
    sequence whose slices are read from the database: a page of them costs three queries however many there are.

    ``count`` is known beforehand (from :func:`task_counts`), so nothing counts them again.
    """

    def __init__(self, user: AbstractBaseUser, *, count: int, state: str = "", project_id: int = 0) -> None:
        self.user, self.state, self.project_id, self._count = user, state, project_id, count

    def count(self) -> int:
        return self._count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: slice) -> list[Task]:
        if not isinstance(index, slice) or index.step is not None:
            raise TypeError("TaskRows are read a slice (a page) at a time")
        start, stop, _ = index.indices(self._count)
        if stop <= start:
            return []
        params = {
            "user": self.user.pk,
            "state": self.state,
            "project": self.project_id,
            "limit": stop - start,
            "offset": start,
            "ids": None,
        }
        with connection.cursor() as cursor:
            if self.state:
                cursor.execute(_PAGE_OF_STATE_SQL, params)
                states = dict(cursor.fetchall())
            else:
                cursor.execute(_PAGE_SQL, params)
                ids = [pk for (pk,) in cursor.fetchall()]
                cursor.execute(_PAGE_STATES_SQL, {"user": self.user.pk, "ids": ids})
                found = dict(cursor.fetchall())
                states = {pk: found[pk] for pk in ids}
            cursor.execute(_PROGRESS_SQL, [list(states)])
            figures = {row[0]: row[1:] for row in cursor.fetchall()}
        assignments = Assignment.objects.select_related("project", "pair__complex_document", "pair__simple_document").in_bulk(list(states))
        return [Task(assignments[pk], figures[pk][1], figures[pk][0], state) for pk, state in states.items()]


@dataclass(frozen=True)
class TaskList:
    """What My tasks shows: the count per state (over every project), the user's projects, and the rows asked for."""

    counts: dict[str, int]
    projects: list[AnnotationProject]
    rows: TaskRows

    @property
    def all_count(self) -> int:
        return sum(self.counts.values())


def task_list_read(user: AbstractBaseUser, *, state: str = "", project: str = "") -> TaskList:
    """The user's tasks with their counts; ``rows`` are those in ``state`` of ``project`` (a project id as the query string
    gives it). An unknown state or a project that is not a number selects nothing."""
    by_project = task_counts(user)
    counts = {name: sum(states.get(name, 0) for states in by_project.values()) for name in STATES}
    projects = list(AnnotationProject.objects.filter(pk__in=list(by_project)).order_by("-created_at", "pk"))
    if (state and state not in STATES) or (project and not project.isdigit()):
        return TaskList(counts, projects, TaskRows(user, count=0))
    project_id = int(project or 0)
    count = sum(
        number
        for pk, states in by_project.items()
        if not project_id or pk == project_id
        for name, number in states.items()
        if not state or name == state
    )
    return TaskList(counts, projects, TaskRows(user, count=count, state=state, project_id=project_id))


def tasks_for(user: AbstractBaseUser) -> list[Task]:
    """Every assignment of ``user``, newest project first, pairs in document order. My tasks reads a page of
    :class:`TaskRows` instead; this is for callers that want them all."""
    count = sum(sum(states.values()) for states in task_counts(user).values())
    return TaskRows(user, count=count)[0:count]


def next_open_assignment(assignment: Assignment) -> Assignment | None:
    """Where "done, next pair" goes: the annotator's next pair not marked done in the same project (after this one,
    wrapping round), else the first in their other projects (newest project first, as My tasks lists them)."""
    others = Assignment.objects.filter(annotator=assignment.annotator_id, completed_at__isnull=True).exclude(pk=assignment.pk)
    here = others.filter(project=assignment.project_id)
    return (
        here.filter(pair_id__gt=assignment.pair_id).order_by("pair_id").first()
        or here.order_by("pair_id").first()
        or others.order_by("-project__created_at", "project_id", "pair_id").first()
    )


def finished_text(user: AbstractBaseUser) -> str:
    """What an annotator reads once they finished their last open pair (My tasks then lists what is done and what is left)."""
    count = Assignment.objects.filter(annotator=user).count()
    return f"That was your last open pair: all {count} pair{'s' if count != 1 else ''} assigned to you are marked done."


def lands_on_tasks(user: AbstractBaseUser) -> bool:
    """Whether ``user`` starts on My tasks after logging in: an annotator somewhere and a manager nowhere (staff manage)."""
    if user.is_staff:
        return False
    roles = set(ProjectMembership.objects.filter(user=user).values_list("role", flat=True))
    return ProjectMembership.Role.ANNOTATOR in roles and ProjectMembership.Role.MANAGER not in roles
