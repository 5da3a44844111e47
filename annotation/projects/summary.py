"""The project page's figures over every assignment and label: progress, the overlap's shortfall, time per label and
test-item accuracy. Each is summed in PostgreSQL over the whole project (never per pair), and kept in the cache until
the project's labels, assignments, pairs, members or test answers change (:func:`annotation.selectors.project_cached`),
so a page opened again, or paged through, does not sum them again."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from annotation import selectors
from annotation.labelling.quality import Accuracy, annotator_accuracy
from annotation.models import AnnotationProject
from annotation.projects.members import LabelTime, label_times, overlap_shortfall


@dataclass(frozen=True)
class ProjectSummary:
    totals: selectors.ProgressTotals
    shortfall: dict | None  # None for an annotator, who sees their own work only
    label_times: list[LabelTime]
    accuracy: list[Accuracy]  # empty for an annotator

    @property
    def percent(self) -> int:
        """Simple sentences labelled of all the assignments' (and, for managers, of those the overlap still lacks)."""
        total = self.totals.total + (self.shortfall["missing_sentences"] if self.shortfall else 0)
        return round(100 * self.totals.touched / total) if total else 0


def project_summary(project: AnnotationProject, *, annotator: AbstractBaseUser | None = None, fresh: bool = False) -> ProjectSummary:
    """The figures over every assignment (``annotator``'s own, when given: what an annotator sees); ``fresh``: counted
    now, whatever the cache holds (the background recount)."""

    def compute() -> ProjectSummary:
        return ProjectSummary(
            totals=selectors.project_progress_totals(project, annotator=annotator),
            shortfall=overlap_shortfall(project) if annotator is None else None,
            label_times=label_times(project, annotator=annotator),
            accuracy=annotator_accuracy(project) if annotator is None else [],
        )

    who = annotator.pk if annotator is not None else None
    return selectors.project_cached(project, "summary", compute, extra=who, recount=f"{__name__}.summary_recount", arg=who, fresh=fresh)


def summary_recount(project: AnnotationProject, annotator_id: int | None) -> None:
    """The background recount of :func:`project_summary` (for the annotator ``annotator_id``, or the manager's: None)."""
    annotator = get_user_model().objects.filter(pk=annotator_id).first() if annotator_id is not None else None
    if annotator_id is None or annotator is not None:
        project_summary(project, annotator=annotator, fresh=True)
