"""Background tasks of the annotation app. Thin: they take ids and call a service.

The services are imported inside each task, on its first run, so a worker starts fast (alignment/tasks.py).
"""

from __future__ import annotations

from django.conf import settings

from alignment.jobs.wrapper import job_task
from annotation.export.models import ExportJob
from annotation.training.models import AdaptationJob, TrainingJob


@job_task(queue="training", name="annotation.train_model", model=TrainingJob)
def train_model(*, job_id: int) -> None:
    """Train a model version from a project's training snapshot (progress on the job row, cancellable)."""
    from alignment.aligning.measures import run_measure
    from annotation.training.service import training_job_execute

    training_job_execute(job_id=job_id, build_measure=run_measure, device=settings.ENCODER_DEVICE)


@job_task(queue="training", name="annotation.adapt_model", model=AdaptationJob)
def adapt_model(*, job_id: int) -> None:
    """Adapt a project's active model to its finished pairs; a kept copy re-suggests the pairs nobody has started."""
    from annotation.training.adaptation import adaptation_job_execute

    adaptation_job_execute(job_id=job_id, device=settings.ENCODER_DEVICE)


@job_task(queue="exports", name="annotation.export_dataset", model=ExportJob)
def export_dataset(*, job_id: int) -> None:
    """Write a project's gold dataset export (files, dataset card, zip; progress on the job row)."""
    from annotation.export.service import export_job_execute

    export_job_execute(job_id=job_id)


@job_task(queue="maintenance", name="annotation.project_figures_refresh")
def project_figures_refresh(*, project_id: int, recount: str, arg: int | None = None) -> None:
    """Count a project's page-wide figures again after it changed (annotation.selectors.project_cached)."""
    from annotation.selectors import project_figures_recount

    project_figures_recount(project_id=project_id, recount=recount, arg=arg)


@job_task(queue="maintenance", name="annotation.queue_counts_refresh")
def queue_counts_refresh(*, project_id: int) -> None:
    """Count the queue figures of a project's assignments again after its suggestion run changed (annotation.labelling.queue)."""
    from annotation.labelling.queue import queue_counts_recount

    queue_counts_recount(project_id=project_id)


@job_task(queue="maintenance", name="annotation.assignments_distribute")
def assignments_distribute(*, project_id: int, after: int = 0) -> None:
    """Give a large project's pairs out after a manager's Assign press (annotation.projects.assigning), a time slice at a time."""
    from alignment.jobs.slices import TimeSlice
    from annotation.projects.assigning import assignments_distribute_later

    assignments_distribute_later(project_id=project_id, after=after, time_slice=TimeSlice.from_settings())
