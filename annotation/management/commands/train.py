"""``manage.py train --project NAME``: train a model version from a project's verified labels.

Runs the training job here (default) and prints its progress and figures, or ``--queue``s it
for the worker. ``--promote`` promotes the new version when it beats the active one.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from alignment.aligning.measures import run_measure
from annotation.models import AnnotationProject, TrainingJob
from annotation.training import registry
from annotation.training import service as training
from annotation.training.snapshot import TrainingDataError
from models_ml.aligning.train_config import TrainingConfig


class Command(BaseCommand):
    help = "Train the aligner from a project's verified (or imported) labels and register a model version."

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = TrainingConfig()
        parser.add_argument("--project", required=True, help="annotation project name")
        parser.add_argument("--seed", type=int, default=0, help="seeds the split of new document pairs and training (default 0)")
        parser.add_argument("--epochs", type=int, default=defaults.epochs)
        parser.add_argument("--lr", type=float, default=defaults.lr)
        parser.add_argument("--patience", type=int, default=defaults.patience, help="early stopping on the dev documents")
        parser.add_argument(
            "--base",
            choices=training.BASES,
            default="active",
            help="start from the active version, or the base model (the shipped default model or the hand-calibrated aligner)",
        )
        parser.add_argument("--user", help="recorded as the version's author (default: the project's creator)")
        parser.add_argument("--queue", action="store_true", help="queue the job for the worker instead of running it here")
        parser.add_argument("--promote", action="store_true", help="promote the new version if it beats the active one")

    def handle(self, *args, **options) -> None:
        try:
            project = AnnotationProject.objects.get(name=options["project"])
        except AnnotationProject.DoesNotExist:
            names = ", ".join(AnnotationProject.objects.values_list("name", flat=True)[:10]) or "none"
            raise CommandError(f"no annotation project named {options['project']!r} (projects: {names})") from None
        user = self._user(options["user"], project)
        try:
            job = training.training_job_create(
                project=project, created_by=user, seed=options["seed"], epochs=options["epochs"], lr=options["lr"],
                patience=options["patience"], base=options["base"], enqueue=options["queue"],
            )  # fmt: skip
        except (TrainingDataError, ValueError) as error:
            raise CommandError(str(error)) from None
        counts = job.snapshot.counts
        self.stdout.write(f"snapshot {job.snapshot_id}: labels {counts['labels']}, document pairs {counts['pairs']}")
        if options["queue"]:
            self.stdout.write(f"training job {job.pk} queued; follow it on the project's Models page")
            return
        job = training.training_job_execute(job_id=job.pk, build_measure=run_measure, device=settings.ENCODER_DEVICE)
        for entry in job.progress:
            dev = f", dev group F1 {entry['dev_group_f1']:.3f}" if "dev_group_f1" in entry else ""
            if "log_likelihood" in entry:
                self.stdout.write(f"epoch {entry['epoch']}/{entry['epochs']}: log-likelihood {entry['log_likelihood']:.3f}{dev}")
            else:  # epoch 0: the starting weights, scored before any training
                self.stdout.write(f"epoch 0/{entry['epochs']}: before training{dev}")
        if job.status != TrainingJob.Status.SUCCEEDED:
            raise CommandError(f"training job {job.pk} {job.status}: {job.error}")
        version = job.version
        for split in ("dev", "test"):
            self.stdout.write(f"{version} {split}: {_figures(version.metrics[split])}")
        self.stdout.write(f"{version.baseline['name']} test (same documents): {_figures(version.baseline['test'])}")
        self.stdout.write(self.style.SUCCESS(f"registered {version} at {version.path}"))
        if options["promote"]:
            try:
                activation = registry.version_promote(version=version, by=user, build_measure=run_measure)
            except ValueError as error:
                raise CommandError(str(error)) from None
            self.stdout.write(self.style.SUCCESS(f"promoted {version}; re-alignment run {activation.alignment_run_id} queued"))

    def _user(self, username: str | None, project: AnnotationProject):
        if username is None:
            return project.created_by
        try:
            return get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None


def _figures(report: dict) -> str:
    parts = []
    for task in ("task1", "task2"):
        for level in ("sentence", "group"):
            prf = report[level][task]
            parts.append(f"{task} {level} P/R/F1 {prf['precision']:.3f}/{prf['recall']:.3f}/{prf['f1']:.3f}")
    return "; ".join(parts)
