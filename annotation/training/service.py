"""Training jobs: snapshot the gold, train in the background with live progress, register a version only at the end.

A job goes queued → running → succeeded | failed | cancelled. While it runs it writes its
stage and one progress entry per epoch (log-likelihood, dev F1) to its row, which the models
page polls. Files are written to a hidden temporary folder first and renamed into place;
the ModelVersion row is created in the same transaction that marks the job succeeded, so a
cancelled or crashed job leaves neither a row nor a folder.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Pickup
from annotation.models import AnnotationProject
from annotation.training.models import ModelVersion, TrainingJob
from annotation.training.registry import (
    MeasureBuilder,
    SimilarityCache,
    active_aligner,
    base_aligner_name,
    comparison_losses,
    evaluate_on,
    evaluate_test,
    untrained_aligner,
    version_load,
)
from annotation.training.snapshot import snapshot_create, snapshot_gold_pairs
from models_ml.aligning.aligner_config import LEARNED
from models_ml.aligning.train_config import TrainingConfig
from models_ml.data.checkpoint import CHECKSUMS, sha256

if TYPE_CHECKING:  # training brings torch: imported where the job trains, not by the page that queues it
    from models_ml.aligning.aligner import Aligner
    from models_ml.aligning.train import EpochReport

TRAIN_TASK = "annotation.train_model"
BASES = ("active", "untrained")
PAIR_CLASSIFIER = "pair_classifier"  # sub-folder of a version with its fine-tuned cross-encoder


class TrainingCancelled(Exception):
    """Raised from the per-epoch hook when a cancel was requested."""


def training_job_create(
    *, project: AnnotationProject, created_by: AbstractBaseUser | None, seed: int = 0, epochs: int = 10, lr: float = 0.05,
    patience: int = 3, base: str = "active", pair_classifier: bool = False, pair_classifier_epochs: int = 2,
    enqueue: bool = True,
) -> TrainingJob:  # fmt: skip
    """Snapshot the project's gold and queue a job; TrainingDataError / ValueError say what is wrong."""
    if base not in BASES:
        raise ValueError(f"unknown base {base!r}; bases: {', '.join(BASES)}")
    training = TrainingConfig(epochs=epochs, lr=lr, patience=patience)  # ValueError on bad values
    if pair_classifier and pair_classifier_epochs < 1:
        raise ValueError(f"pair classifier epochs must be >= 1, got {pair_classifier_epochs}")
    with transaction.atomic():
        snapshot = snapshot_create(project=project, seed=seed, created_by=created_by)
        job = TrainingJob.objects.create(
            project=project, snapshot=snapshot, created_by=created_by,
            base_version=project.active_model if base == "active" else None,
            config={
                **asdict(training), "seed": seed, "base": base, "pair_classifier": pair_classifier,
                "pair_classifier_epochs": pair_classifier_epochs,
            },
        )  # fmt: skip
        if enqueue:
            enqueue_on_commit(TRAIN_TASK, job, job_id=job.pk)
    return job


def training_job_cancel(*, job: TrainingJob) -> TrainingJob:
    """A queued job is cancelled at once; a running one stops after the epoch in flight."""
    with transaction.atomic():
        locked = TrainingJob.objects.select_for_update().get(pk=job.pk)
        if locked.status == TrainingJob.Status.QUEUED:
            locked.mark_cancelled()
        elif locked.status == TrainingJob.Status.RUNNING:
            locked.cancel_requested = True
            locked.save(update_fields=["cancel_requested"])
    locked.refresh_from_db()
    return locked


def _stage(job_id: int, stage: str) -> None:
    TrainingJob(pk=job_id).heartbeat(stage=stage)


def _epoch_hook(job_id: int, entries: list[dict]):
    """Per-epoch hook of the CRF; ``entries`` is the job's progress so far (one writer: rewritten whole each epoch)."""

    def on_epoch(report: EpochReport) -> None:
        entry = {"model": "CRF", "epoch": report.epoch, "epochs": report.epochs}
        if report.log_likelihood is not None:  # None: epoch 0, the starting weights before any training
            entry["log_likelihood"] = round(report.log_likelihood, 4)
        if report.dev is not None:
            entry |= {"dev_group_f1": round(report.dev.group_task1.f1, 4), "dev_pair_f1": round(report.dev.sentence_task1.f1, 4)}
        entry["best_epoch"] = report.best_epoch
        stage = (
            f"training the CRF: epoch {report.epoch} of {report.epochs}"
            if report.epoch
            else "training the CRF: scoring the starting weights"
        )
        _record(job_id, entries, entry, stage)

    return on_epoch


def _record(job_id: int, entries: list[dict], entry: dict, stage: str) -> None:
    entries.append(entry)
    TrainingJob(pk=job_id).heartbeat(progress=entries, stage=stage)
    if TrainingJob.objects.filter(pk=job_id, cancel_requested=True).exists():
        raise TrainingCancelled


def _staging_folders(job: TrainingJob) -> list[Path]:
    """Staging folders of the job's attempts (a killed worker leaves its own behind)."""
    root = Path(settings.MODEL_DIR) / f"project-{job.project_id}"
    return sorted(root.glob(f".staging-job{job.pk}-*")) if root.is_dir() else []


def training_job_execute(*, job_id: int, build_measure: MeasureBuilder, device: str = "") -> TrainingJob:
    """Run a queued job to the end; errors mark it failed (and re-raise), a cancel request marks it cancelled.

    Found "running" (its worker died) training cannot resume mid-epoch: the dead attempt's staging folder is
    removed and it starts again from scratch, or after JOB_MAX_ATTEMPTS it fails and is cleaned up (Job.pickup).
    """
    job = TrainingJob.objects.select_related("project", "snapshot", "base_version").get(pk=job_id)
    pickup = job.pickup()
    if pickup in (Pickup.RESTART, Pickup.GAVE_UP):
        for folder in _staging_folders(job):
            shutil.rmtree(folder, ignore_errors=True)
    if pickup is Pickup.GAVE_UP:
        TrainingJob.objects.filter(pk=job_id).update(stage="failed")
    if pickup not in (Pickup.FRESH, Pickup.RESTART):
        return TrainingJob.objects.get(pk=job_id)
    job.heartbeat(progress=[], stage="starting" if pickup is Pickup.FRESH else f"restarting (attempt {job.attempts})")
    staging: Path | None = None
    try:
        staging, fields = _train(job, build_measure, device, progress=[])
        _register(job, staging, fields)
        staging = None  # renamed into place and registered
    except TrainingCancelled:
        job.mark_cancelled(stage="cancelled")
    except Exception as exc:
        job.mark_failed_by(exc, stage="failed")
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return TrainingJob.objects.get(pk=job_id)


def _train(job: TrainingJob, build_measure: MeasureBuilder, device: str, *, progress: list[dict]) -> tuple[Path, dict]:
    """Train, evaluate and save to a staging folder; returns it and the version's fields."""
    from models_ml.aligning.train import train_aligner
    from models_ml.similarity.cross_encoder import save_pair_classifier

    _stage(job.pk, "reading the snapshot")
    train, dev, test = (snapshot_gold_pairs(job.snapshot, split) for split in ("train", "dev", "test"))
    project = job.project
    if job.base_version is not None:
        aligner, base_name = version_load(job.base_version, device=device), str(job.base_version)
    else:
        aligner, base_name = untrained_aligner(project, device=device), base_aligner_name(project)
    cache = SimilarityCache(build_measure)
    _stage(job.pk, f"scoring {len(train) + len(dev) + len(test)} document pairs with {aligner.config.measure}")
    config = job.config
    training = TrainingConfig(epochs=config["epochs"], lr=config["lr"], patience=config["patience"])
    learned = aligner.config.measure == LEARNED  # its scorer is fine-tuned first, then it scores the pairs itself
    report = train_aligner(
        train, aligner=aligner, training=training, seed=config["seed"], similarities=None if learned else cache(aligner, train),
        dev_pairs=dev, dev_similarities=None if learned else cache(aligner, dev), on_epoch=_epoch_hook(job.pk, progress),
    )  # fmt: skip
    _stage(job.pk, "evaluating on dev and test documents")
    metrics = {"dev": evaluate_on(aligner, dev, cache).as_dict(), **evaluate_test(aligner, test, cache)}
    classifier = None
    if config.get("pair_classifier"):
        classifier, metrics["pair_classifier"] = _fine_tune_pair_classifier(job, train, dev, test, device, progress)
    project.refresh_from_db()
    against, against_name = active_aligner(project, device=device)
    baseline = {"version": project.active_model_id, "name": against_name, **evaluate_test(against, test, cache)}
    if TrainingJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise TrainingCancelled
    _stage(job.pk, "saving the model")
    root = Path(settings.MODEL_DIR) / f"project-{project.pk}"
    staging = root / f".staging-job{job.pk}-{uuid.uuid4().hex[:8]}"
    aligner.save(staging)
    calibrated = _calibrate(aligner, test, cache, staging, job)
    if classifier is not None:
        save_pair_classifier(classifier, staging / PAIR_CLASSIFIER)
    fields = {
        "config": aligner.config.to_dict(), "metrics": metrics, "baseline": baseline,
        "training": {
            **config, "base_name": base_name, "epochs_run": len(report.log_likelihoods), "best_epoch": report.best_epoch,
            "stopped_early": report.stopped_early, "dev_f1_per_epoch": [round(f, 4) for f in report.dev_f1],
            "partial_threshold": report.partial_threshold, "seconds": round(report.seconds, 2),
            "pairs": {"train": len(train), "dev": len(dev), "test": len(test)}, "skipped_blocks": len(report.skipped_blocks),
            "calibration": calibrated,
        },
    }  # fmt: skip
    if classifier is not None:
        fields["training"]["pair_classifier_checksum"] = sha256(staging / PAIR_CLASSIFIER / CHECKSUMS)
    return staging, fields


def _calibrate(aligner: Aligner, test: list, cache: SimilarityCache, staging: Path, job: TrainingJob) -> dict:
    """The version's held-out calibration (``calibration.json``, :mod:`models_ml.aligning.calibration`): how often its
    suggestions on the snapshot's test documents, which it was not trained on, were right at each confidence. Bulk
    accept falls back on it while a project has too few answers of its own. Returns its counts for the version's record."""
    from models_ml.aligning.calibration import calibration_write, held_out_answers

    answers = held_out_answers(aligner, test, cache(aligner, test))
    basis = f"the {len(test)} test document pair{'s' if len(test) != 1 else ''} of snapshot {job.snapshot_id}, held out of training"
    calibration_write(staging, answers, basis)
    return {"suggestions": len(answers), "right": sum(right for _, right in answers), "basis": basis}


def _fine_tune_pair_classifier(
    job: TrainingJob, train: list, dev: list, test: list, device: str, entries: list[dict]
) -> tuple[object, dict]:
    """Fine-tune the cross-encoder from the base version's classifier (or the bundled MiniLM); its dev/test figures."""
    from models_ml.similarity.cross_encoder import load_pair_classifier
    from models_ml.similarity.cross_encoder_training import (
        PairTrainingConfig,
        fine_tune_pair_classifier,
        pair_classifier_report,
        pair_examples,
    )
    from models_ml.similarity.encoders import default_device

    device = device or default_device()
    base = Path(job.base_version.path) / PAIR_CLASSIFIER if job.base_version is not None else None
    start = load_pair_classifier(base, device=device) if base is not None and base.is_dir() else None
    _stage(job.pk, "fine-tuning the pair classifier" + (f" from {job.base_version}" if start is not None else " from MiniLM"))
    epochs = job.config.get("pair_classifier_epochs", 2)

    def on_epoch(epoch: int, loss: float, report: dict | None) -> None:
        entry = {"model": "pair classifier", "epoch": epoch, "epochs": epochs, "loss": round(loss, 4)}
        if report is not None:
            entry["dev_pair_f1"] = round(report["f1"], 4)
        _record(job.pk, entries, entry, f"fine-tuning the pair classifier: epoch {epoch} of {epochs}")

    seed = job.config["seed"]
    model, _, _ = fine_tune_pair_classifier(
        train, training=PairTrainingConfig(epochs=epochs), seed=seed, device=device, model=start, dev_pairs=dev,
        patience=job.config["patience"], on_epoch=on_epoch,
    )  # fmt: skip
    figures = {
        split: pair_classifier_report(model, pair_examples(pairs, negatives_per_positive=3, seed=seed + 10_000))
        for split, pairs in (("dev", dev), ("test", test))
    }
    return model, figures


def _register(job: TrainingJob, staging: Path, fields: dict) -> ModelVersion:
    """Rename the staged folder to v<N> and create the row, in one transaction with the job's success."""
    with transaction.atomic():
        project = AnnotationProject.objects.select_for_update().get(pk=job.project_id)
        if TrainingJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
            raise TrainingCancelled
        number = (ModelVersion.objects.filter(project=project).aggregate(n=Max("number"))["n"] or 0) + 1
        final = staging.parent / f"v{number}"
        if final.exists():  # left by a registration whose transaction rolled back after the rename
            shutil.rmtree(final)
        version = ModelVersion.objects.create(
            project=project, number=number, snapshot=job.snapshot, path=str(final),
            checksum=sha256(staging / CHECKSUMS), created_by=job.created_by, **fields,
        )  # fmt: skip
        if not job.mark_succeeded(version=version, stage="done"):
            raise TrainingCancelled  # no longer running (cancelled or failed meanwhile): roll the version back
        staging.rename(final)  # last: if it fails, the transaction rolls back and the staging folder is removed
    return version


def beats_active(version: ModelVersion) -> bool | None:
    """Whether the version's stored comparison (made against the model active at training time) says it wins."""
    if not version.baseline or "test" not in version.baseline:
        return None
    return not comparison_losses(version.metrics, version.baseline)
