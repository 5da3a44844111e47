"""Automatic adaptation: a finished pair refreshes the suggestions of the pairs nobody has started.

Finishing a pair (the annotation screen's "done") queues an :class:`AdaptationJob` for the project,
at most one waiting at a time: the job reads the finished pairs when it runs. It adapts the
project's active model to them with :func:`models_ml.aligning.adapt.adapt_aligner` (fine-tuned
copies judged leave-one-pair-out; the start is kept unless a copy beats it: the guard). Then:

- a copy won: it is registered as a version marked automatic, with the adaptation's reason, made
  the active model as a promotion would (a :class:`ModelActivation` row, so rollback works), and
  only the pairs nobody has started are re-aligned with it (:mod:`annotation.training.resuggest`);
- the start won, or nothing could be tried (the hand-calibrated aligner has no trained weights; no
  finished pair has settled labels yet): the job records the reason, which the Models page shows.

Labels are never touched. ``AUTO_ADAPT`` (settings) switches it off; ``AUTO_ADAPT_EPOCHS`` bounds the
CRF epochs each copy is fine-tuned for.

**Bounded, whatever the presses.** Per project at most one job waits and one runs:

- a finish while one waits only points it at the new pair: the project's row lock serialises two finishes,
  and the waiting row's lock keeps a worker from claiming it between the check and the repoint;
- a finish while one runs (it has read its pairs) queues the one follow-up, which reads the pairs finished by then;
- "done" again on a finished pair its annotator has not changed since queues nothing
  (:func:`annotation.services.assignment_complete` says whether a press finished anything).

So a burst of presses costs at most one job per pair it finishes or changes, and no rate limit is needed. On the
worker side every job of a project is deferred with the Procrastinate lock :func:`adaptation_lock`: a worker never
fetches a job while another job with that lock is running, and jobs sharing a lock start in the order they were
queued, so a stalled job the sweep requeues (it keeps its lock) runs again before its follow-up, never beside it.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Pickup
from alignment.models import DocumentPair
from annotation.models import AnnotationProject
from annotation.training.models import AdaptationJob, ModelActivation, ModelVersion, TrainingSnapshot
from annotation.training.registry import ModelCorrupted, base_aligner_name, base_model_dir, realign, untrained_aligner, version_load
from annotation.training.resuggest import unstarted_pair_ids
from annotation.training.snapshot import TrainingDataError, finished_snapshot, snapshot_gold_pairs
from models_ml.data.checkpoint import CHECKSUMS, sha256

if TYPE_CHECKING:  # the aligner brings torch: imported where the job adapts, not by the screen that queues it
    from models_ml.aligning.adapt import AdaptReport
    from models_ml.aligning.aligner import Aligner

ADAPT_TASK = "annotation.adapt_model"


class NotAdaptable(Exception):
    """Nothing to adapt or nothing to adapt to; the message is the record's reason."""


def adaptation_lock(project_id: int) -> str:
    """The Procrastinate lock every adaptation job of the project is deferred with: one runs at a time, in order."""
    return f"adaptation-project-{project_id}"


def adaptation_queue(*, project: AnnotationProject, pair: DocumentPair, by: AbstractBaseUser | None) -> AdaptationJob | None:
    """After ``by`` finished ``pair``: queue the project's adaptation, or point the one already waiting at ``pair``.

    None when AUTO_ADAPT is off. A job already running has read its pairs, so a finish then queues the next one;
    so the project has at most one job waiting and one running (see the module docstring).
    """
    if not settings.AUTO_ADAPT:
        return None
    with transaction.atomic():
        AnnotationProject.objects.select_for_update().get(pk=project.pk)  # two finishes at once queue one job
        # A later statement than the lock, so it sees a job the other finish committed; the row stays locked until the
        # repoint commits, so a worker claims it after that (then it reads this pair too) or before the check (then a new
        # job is queued).
        waiting = AdaptationJob.objects.select_for_update().filter(project=project, status=AdaptationJob.Status.QUEUED).first()
        if waiting is not None:
            AdaptationJob.objects.filter(pk=waiting.pk).update(after_pair=pair)
            return waiting
        job = AdaptationJob.objects.create(project=project, after_pair=pair, created_by=by)
        enqueue_on_commit(ADAPT_TASK, job, options={"lock": adaptation_lock(project.pk)}, job_id=job.pk)
    return job


def adaptation_job_execute(*, job_id: int, device: str = "") -> AdaptationJob:
    """Run a queued adaptation to its recorded outcome; errors mark it failed (and re-raise).

    Found "running" (its worker died) it starts again: the dead attempt's staging folder is removed.
    """
    job = AdaptationJob.objects.select_related("project", "after_pair__complex_document", "after_pair__simple_document").get(pk=job_id)
    pickup = job.pickup()
    if pickup in (Pickup.RESTART, Pickup.GAVE_UP):
        for folder in _staging_folders(job):
            shutil.rmtree(folder, ignore_errors=True)
    if pickup not in (Pickup.FRESH, Pickup.RESTART):
        return AdaptationJob.objects.get(pk=job_id)
    from models_ml.aligning.adapt import adapt_aligner
    from models_ml.aligning.train import TrainingConfig

    staging: Path | None = None
    try:
        start, start_name, start_id = _start(job.project, device)
        snapshot = _snapshot(job.project)
        labelled = snapshot_gold_pairs(snapshot, None)
        job.heartbeat(stage=f"adapting {start_name} to {len(labelled)} finished pair(s)")
        adapted, report = adapt_aligner(start, labelled, training=TrainingConfig(epochs=settings.AUTO_ADAPT_EPOCHS), seed=0)
        figures = {name: [round(group, 4), round(pair, 4)] for name, (group, pair) in report.figures.items()}
        reason = f"{_after(job)}: {report.reason()}"
        if report.kept == "start":
            job.mark_succeeded(outcome=AdaptationJob.Outcome.KEPT, reason=reason, figures=figures, stage="done")
        else:
            staging = _staging(job)
            adapted.save(staging)
            _register(job, snapshot, staging, report, reason, figures, (start_name, start_id))
            staging = None  # renamed into place and registered
    except NotAdaptable as why:
        job.mark_succeeded(outcome=AdaptationJob.Outcome.NOT_ADAPTED, reason=f"{_after(job)}: not adapted: {why}", stage="done")
    except Exception as exc:
        job.mark_failed_by(exc, stage="failed")
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return AdaptationJob.objects.get(pk=job_id)


def _after(job: AdaptationJob) -> str:
    return f"Automatic adaptation after {job.after_pair}" if job.after_pair is not None else "Automatic adaptation"


def _start(project: AnnotationProject, device: str) -> tuple[Aligner, str, int | None]:
    """The active model to adapt, its name and version id; NotAdaptable when it has no trained weights or cannot be loaded."""
    project = AnnotationProject.objects.select_related("active_model", "suggestion_run").get(pk=project.pk)
    try:
        if project.active_model is not None:
            return version_load(project.active_model, device=device), str(project.active_model), project.active_model_id
        if base_model_dir(project):
            return untrained_aligner(project, device=device), base_aligner_name(project), None
    except ModelCorrupted as error:
        raise NotAdaptable(f"the active model cannot be loaded ({error})") from None
    raise NotAdaptable(
        f"the project's model is {base_aligner_name(project)}, which has no trained weights to adapt; "
        f"train a version and promote it on this page first"
    )


def _snapshot(project: AnnotationProject) -> TrainingSnapshot:
    try:
        return finished_snapshot(project)
    except TrainingDataError as error:
        raise NotAdaptable(str(error)) from None


def _staging_folders(job: AdaptationJob) -> list[Path]:
    root = Path(settings.MODEL_DIR) / f"project-{job.project_id}"
    return sorted(root.glob(f".staging-adapt{job.pk}-*")) if root.is_dir() else []


def _staging(job: AdaptationJob) -> Path:
    return Path(settings.MODEL_DIR) / f"project-{job.project_id}" / f".staging-adapt{job.pk}-{uuid.uuid4().hex[:8]}"


def _register(
    job: AdaptationJob, snapshot: TrainingSnapshot, staging: Path, report: AdaptReport, reason: str, figures: dict,
    start: tuple[str, int | None],
) -> ModelVersion:  # fmt: skip
    """Save the snapshot, register the adapted copy as an automatic version, make it active and queue the re-suggestion
    of the unstarted pairs, in one transaction with the job's success (the folder is renamed into place before the run,
    which checks it, is queued)."""
    with transaction.atomic():
        project = AnnotationProject.objects.select_for_update().get(pk=job.project_id)
        start_name, start_id = start
        if project.active_model_id != start_id:  # a promotion or rollback meanwhile: the manager's choice stands
            raise NotAdaptable(f"the active model changed from {start_name} while it adapted; the next finished pair adapts the new one")
        number = (ModelVersion.objects.filter(project=project).aggregate(n=Max("number"))["n"] or 0) + 1
        final = staging.parent / f"v{number}"
        if final.exists():  # left by a registration whose transaction rolled back after the rename
            shutil.rmtree(final)
        from models_ml.aligning.aligner import Aligner

        aligner = Aligner.load(staging)
        snapshot.save()
        version = ModelVersion.objects.create(
            project=project, number=number, snapshot=snapshot, path=str(final), checksum=sha256(staging / CHECKSUMS),
            config=aligner.config.to_dict(), metrics={"adaptation": {"figures": figures, "chosen": report.chosen, "pairs": report.pairs,
            "held_out": report.held_out}}, automatic=True, automatic_reason=reason,
            training={"automatic": True, "base_name": start_name, "prior": report.prior, "epochs": report.epochs, "seed": 0},
        )  # fmt: skip
        activation = ModelActivation.objects.create(
            project=project, version=version, previous_id=project.active_model_id, action=ModelActivation.Action.AUTOMATIC, reason=reason
        )
        AnnotationProject.objects.filter(pk=project.pk).update(active_model=version)
        project.active_model = version
        staging.rename(final)  # before the run, which checks the folder; a rollback after it leaves v<N> for the next one
        unstarted = unstarted_pair_ids(project)
        run = realign(project, version, None, pair_ids=unstarted)
        ModelActivation.objects.filter(pk=activation.pk).update(alignment_run=run)
        if not job.mark_succeeded(outcome=AdaptationJob.Outcome.ADAPTED, reason=reason, figures=figures, version=version,
                                  alignment_run=run, stage=f"done: re-suggesting {len(unstarted)} unstarted pair(s)"):  # fmt: skip
            raise RuntimeError(f"{job} is no longer running; its adapted model is not registered")
    return version
