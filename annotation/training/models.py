"""Retraining from human labels: training snapshots, training jobs, model versions and their activations.

A :class:`TrainingSnapshot` freezes which labels a model learns from (every item with its
final label, the label events behind it, counts per label and the document-level split).
A :class:`TrainingJob` trains on one snapshot in the background and, only when everything
succeeded, registers a :class:`ModelVersion`: files on disk under MODEL_DIR with a checksum,
its config and Task 1 / Task 2 figures on the snapshot's dev and test documents. A project's
active version is ``AnnotationProject.active_model``; every change of it (promotion, forced
promotion with a reason, rollback) is a :class:`ModelActivation` row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from alignment.jobs.models import Job
from alignment.models import AlignmentRun


class TrainingSnapshot(models.Model):
    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="training_snapshots")
    seed = models.IntegerField(default=0, help_text="Seeds the document-level split of pairs new to this project's snapshots.")
    splits = models.JSONField(help_text='{"<document pair id>": "train" | "dev" | "test"}')
    items = models.JSONField(help_text="[[pair id, simple sentence id, complex sentence id, label], ...]: the labels trained on.")
    label_event_ids = models.JSONField(help_text="The label events the items' labels come from.")
    counts = models.JSONField(help_text='{"labels": {label: n}, "pairs": {split: n}, "labels_by_split": {split: {label: n}}}')
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"snapshot {self.pk}"

    def pair_ids(self, split: str) -> list[int]:
        return sorted(int(pair_id) for pair_id, name in self.splits.items() if name == split)


class ModelVersion(models.Model):
    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="model_versions")
    number = models.PositiveIntegerField(help_text="v1, v2, ... within the project.")
    snapshot = models.ForeignKey(TrainingSnapshot, on_delete=models.PROTECT, related_name="versions")
    config = models.JSONField(help_text="The aligner's config as saved with the model.")
    training = models.JSONField(default=dict, help_text="Optimisation settings, seed, base version, epochs run, best epoch.")
    path = models.CharField(max_length=500, help_text="Model directory under MODEL_DIR.")
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the directory's checksums.json, checked when loading.")
    metrics = models.JSONField(help_text='{"dev": report, "test": report}: Task 1 / Task 2, sentence-pair and group P/R/F1.')
    baseline = models.JSONField(
        default=dict, help_text='What it was compared with on the same test documents: {"version": id | null, "name": ..., "test": report}.'
    )
    automatic = models.BooleanField(default=False, help_text="Adapted by the background job a finished pair queues, not trained by hand.")
    automatic_reason = models.TextField(blank=True, help_text="Why the automatic adaptation kept this fine-tuned copy.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="one_number_per_project_version")]

    def __str__(self) -> str:
        return f"v{self.number}"

    def figure(self, split: str, level: str = "group", task: str = "task1", measure: str = "f1") -> float | None:
        try:
            return float(self.metrics[split][level][task][measure])
        except (KeyError, TypeError):
            return None


class TrainingJob(Job):
    """Trains on one snapshot. Not resumable: a requeue after a dead worker restarts from scratch."""

    kind = "training"
    resumable = False

    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="training_jobs")
    snapshot = models.ForeignKey(TrainingSnapshot, on_delete=models.PROTECT, related_name="jobs")
    base_version = models.ForeignKey(ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    config = models.JSONField(help_text='{"epochs", "lr", "patience", "seed"}')
    cancel_requested = models.BooleanField(default=False)
    stage = models.CharField(max_length=200, blank=True, help_text="What the job is doing now.")
    progress = models.JSONField(default=list, help_text="One entry per epoch: epoch, log-likelihood, dev F1.")
    version = models.OneToOneField(ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="job")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"training job {self.pk} ({self.status})"


class ModelActivation(models.Model):
    """One change of a project's active model; ``version`` None means the untrained aligner."""

    class Action(models.TextChoices):
        PROMOTE = "promote"
        FORCE = "force", "forced promotion"
        ROLLBACK = "rollback"
        AUTOMATIC = "automatic", "automatic adaptation"

    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="model_activations")
    version = models.ForeignKey(ModelVersion, null=True, on_delete=models.PROTECT, related_name="activations")
    previous = models.ForeignKey(ModelVersion, null=True, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    reason = models.TextField(blank=True)
    comparison = models.JSONField(default=dict, help_text="Both versions' test figures on the same documents at that moment.")
    alignment_run = models.ForeignKey(AlignmentRun, null=True, on_delete=models.SET_NULL, related_name="+")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-pk"]


class AdaptationJob(Job):
    """Adapts the project's active model to its finished pairs (queued when an annotator finishes a pair).

    At most one is queued and one running per project: finishing more pairs while one waits only moves
    ``after_pair``, and the job reads the finished pairs when it runs; a finish while one runs queues the one
    follow-up; workers run a project's jobs one at a time (annotation.training.adaptation). Its outcome is
    recorded whatever happens, so the Models page can say why the model did or did not change. Not resumable:
    a requeue after a dead worker restarts.
    """

    kind = "adaptation"
    resumable = False

    class Outcome(models.TextChoices):
        ADAPTED = "adapted", "adapted: a new version is active"
        KEPT = "kept", "kept the current model"
        NOT_ADAPTED = "not_adapted", "not adapted"

    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="adaptation_jobs")
    after_pair = models.ForeignKey(
        "alignment.DocumentPair", null=True, on_delete=models.SET_NULL, related_name="+", help_text="The finished pair that queued it last."
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    reason = models.TextField(blank=True, help_text="One sentence for the Models page: what was kept and why, or why nothing was tried.")
    figures = models.JSONField(default=dict, help_text="Each candidate's held-out (group F1, pair F1), as AdaptReport.figures.")
    stage = models.CharField(max_length=200, blank=True)
    version = models.OneToOneField(ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="adaptation_job")
    alignment_run = models.ForeignKey(AlignmentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"adaptation job {self.pk} ({self.status})"

    @property
    def lane_user_id(self) -> int | None:
        """Nobody's lane: an annotator's finished pair must not hold their own next jobs behind a project's adaptation."""
        return None
