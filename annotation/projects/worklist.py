"""An annotator's task list: every document pair assigned to them, in every project, with its state.

States, in the order work moves through them: *not started* (no current label), *in progress*
(some simple sentences labelled), *done* (the annotator marked the pair done), *adjudicated*
(a reviewer set a final label on one of its sentence pairs, or verified the pair).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from annotation.models import Assignment, ProjectMembership

STATES = ("not started", "in progress", "done", "adjudicated")

_PROGRESS_SQL = """
    SELECT a.id,
        (SELECT count(*) FROM alignment_sentence s JOIN alignment_documentpair p ON s.document_id = p.simple_document_id
         WHERE p.id = a.pair_id),
        (SELECT count(DISTINCT latest.simple_sentence_id) FROM (
            SELECT DISTINCT ON (e.simple_sentence_id, e.complex_sentence_id) e.simple_sentence_id, e.new_label
            FROM annotation_labelevent e
            WHERE e.project_id = a.project_id AND e.pair_id = a.pair_id AND e.annotator_id = a.annotator_id
              AND e.source <> 'adjudication'
            ORDER BY e.simple_sentence_id, e.complex_sentence_id, e.id DESC
        ) latest WHERE latest.new_label <> ''),
        EXISTS (SELECT 1 FROM annotation_labelevent e
                WHERE e.project_id = a.project_id AND e.pair_id = a.pair_id AND e.source = 'adjudication')
        OR coalesce((SELECT v.verified FROM annotation_pairverification v
                     WHERE v.project_id = a.project_id AND v.pair_id = a.pair_id ORDER BY v.id DESC LIMIT 1), false)
    FROM annotation_assignment a
    WHERE a.annotator_id = %s
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


def tasks_for(user: AbstractBaseUser) -> list[Task]:
    """Every assignment of ``user``, newest project first, pairs in document order; one query for the figures."""
    with connection.cursor() as cursor:
        cursor.execute(_PROGRESS_SQL, [user.pk])
        figures = {row[0]: row[1:] for row in cursor.fetchall()}
    assignments = (
        Assignment.objects.filter(annotator=user)
        .select_related("project", "pair__complex_document", "pair__simple_document")
        .order_by("-project__created_at", "pair__complex_document__external_id", "pair__simple_document__level")
    )
    tasks = []
    for assignment in assignments:
        total, labelled, adjudicated = figures.get(assignment.pk, (0, 0, False))
        if adjudicated:
            state = "adjudicated"
        elif assignment.completed_at:
            state = "done"
        else:
            state = "in progress" if labelled else "not started"
        tasks.append(Task(assignment, labelled, total, state))
    return tasks


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
