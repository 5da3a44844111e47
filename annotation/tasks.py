"""Background tasks of the annotation app. Thin: they take ids and call a service."""

from __future__ import annotations

from django.conf import settings
from django.db import close_old_connections
from procrastinate.contrib.django import app

from alignment.tasks import run_measure
from annotation.export.service import export_job_execute
from annotation.training.service import training_job_execute


@app.task(queue="training", name="annotation.train_model")
def train_model(*, job_id: int) -> None:
    """Train a model version from a project's training snapshot (progress on the job row, cancellable)."""
    close_old_connections()
    try:
        training_job_execute(job_id=job_id, build_measure=run_measure, device=settings.ENCODER_DEVICE)
    finally:
        close_old_connections()


@app.task(queue="exports", name="annotation.export_dataset")
def export_dataset(*, job_id: int) -> None:
    """Write a project's gold dataset export (files, dataset card, zip; progress on the job row)."""
    close_old_connections()
    try:
        export_job_execute(job_id=job_id)
    finally:
        close_old_connections()
