"""The project's Models page: what training would use, training jobs with live progress, versions side by side,
promotion (or forced promotion with a reason) and rollback. Thin: the services decide."""

from __future__ import annotations

from functools import partial

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from alignment.aligning.measures import run_measure
from alignment.aligning.model_names import stored_model_label
from annotation import selectors
from annotation.models import (
    AdaptationJob,
    ModelActivation,
    ModelVersion,
    ProjectMembership,
    TrainingJob,
)
from annotation.training import registry
from annotation.training import service as training
from annotation.training.forms import PromoteForm, TrainForm
from annotation.training.snapshot import TrainingDataError, snapshot_preview


def _project(request: HttpRequest, project_id: int, *, manager: bool = False):
    project, role = selectors.project_get_for_user(request.user, project_id)
    if role == ProjectMembership.Role.ANNOTATOR or (manager and role != ProjectMembership.Role.MANAGER):
        raise PermissionDenied("the models page is for managers (and viewers, read-only)")
    return project, role


def version_rows(project) -> list[dict]:
    """Every version with the figures the page compares, newest first."""
    rows = []
    for version in ModelVersion.objects.filter(project=project).select_related("snapshot", "created_by"):
        baseline = version.baseline.get("test") if version.baseline else None
        rows.append({
            "version": version, "active": version.pk == project.active_model_id, "dev": version.metrics.get("dev"),
            "test": version.metrics.get("test"), "baseline": baseline, "baseline_name": stored_model_label(version.baseline.get("name", "")),
            "beats": training.beats_active(version), "domains": _domain_rows(version),
        })  # fmt: skip
    return rows


def _domain_rows(version: ModelVersion) -> list[dict]:
    """Per domain of the test documents: the version's group F1 and the compared model's."""
    ours = version.metrics.get("test_by_domain") or {}
    theirs = (version.baseline or {}).get("test_by_domain") or {}
    rows = []
    for domain, report in ours.items():
        f1 = registry.group_f1(report)
        other = registry.group_f1(theirs[domain]) if domain in theirs else None
        rows.append({"domain": domain, "f1": f1, "baseline": other, "worse": other is not None and f1 < other})
    return rows


def _preview_figures(project, *, fresh: bool = False) -> dict:
    return selectors.project_cached(
        project, "training-preview", partial(snapshot_preview, project), recount=f"{__name__}.preview_recount", fresh=fresh
    )


def preview_recount(project, _arg: int | None) -> None:
    """The background recount of the training preview (:func:`_preview`'s figures)."""
    _preview_figures(project, fresh=True)


def _preview(project) -> dict:
    """snapshot_preview with one row per split: (split, document pairs, [count per label]); kept in the cache until the
    project's labels, verifications, assignments or snapshots change."""
    preview = _preview_figures(project)
    if not preview["error"]:
        labels = list(preview["labels"])
        preview["rows"] = [
            (split, pairs, [preview["labels_by_split"][split].get(label, 0) for label in labels])
            for split, pairs in preview["pairs"].items()
        ]
    return preview


def model_names(project) -> dict:
    """Every model the Models page names, in the one vocabulary (:func:`registry.version_name`, ``run.model_label``)."""
    activations = list(ModelActivation.objects.filter(project=project).select_related("version", "previous", "by")[:10])
    return {
        "base_label": registry.base_aligner_name(project),
        "active_label": registry.version_name(project, project.active_model),
        "suggestion_label": project.suggestion_run.model_label if project.suggestion_run else "",
        "pending_label": project.pending_suggestion_run.model_label if project.pending_suggestion_run else "",
        "rollback_label": registry.version_name(project, activations[0].previous) if activations else "",
        # rolling back a rollback makes the rolled-back model active again: the page says it is a re-promotion
        "rollback_undoes_rollback": bool(activations) and activations[0].action == ModelActivation.Action.ROLLBACK,
        "activations": [(a, registry.version_name(project, a.previous), registry.version_name(project, a.version)) for a in activations],
    }


def project_models(request: HttpRequest, project_id: int) -> HttpResponse:
    project, role = _project(request, project_id)
    names = model_names(project)
    context = {
        "project": project, "role": role, "form": TrainForm(base_label=names["base_label"]), "preview": _preview(project),
        "corpus_visible": selectors.corpus_visible(request.user, project),
        "jobs": TrainingJob.objects.filter(project=project).select_related("version", "created_by")[:10],
        "rows": version_rows(project), "promote_form": PromoteForm(), **names, "auto_adapt": settings.AUTO_ADAPT,
        "adaptations": AdaptationJob.objects.filter(project=project).select_related("after_pair__complex_document", "after_pair__simple_document")[:10],
    }  # fmt: skip
    return render(request, "annotation/project_models.html", context)


@require_POST
def training_start(request: HttpRequest, project_id: int) -> HttpResponse:
    project, _ = _project(request, project_id, manager=True)
    form = TrainForm(request.POST)
    if form.is_valid():
        try:
            job = training.training_job_create(project=project, created_by=request.user, **form.cleaned_data)
        except (TrainingDataError, ValueError) as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"Training job {job.pk} queued on snapshot {job.snapshot_id}.")
    else:
        messages.error(request, "; ".join(f"{field}: {', '.join(errors)}" for field, errors in form.errors.items()))
    return redirect("annotation:project_models", project_id=project.pk)


def training_job_card(request: HttpRequest, project_id: int, job_id: int) -> HttpResponse:
    """One job's card: polled by htmx while the job is queued or running; once it registered a version, the
    answer also tells the page (``HX-Trigger: versions-changed``) to reload the Versions table."""
    project, role = _project(request, project_id)
    job = get_object_or_404(TrainingJob.objects.select_related("version"), pk=job_id, project=project)
    context = {"project": project, "role": role, "job": job, "base_label": registry.base_aligner_name(project)}
    response = render(request, "annotation/project_models.html#job", context)
    if job.version_id is not None:  # the poll that sees the new version makes the page reload its Versions table
        response["HX-Trigger"] = "versions-changed"
    return response


@require_POST
def training_cancel(request: HttpRequest, project_id: int, job_id: int) -> HttpResponse:
    project, role = _project(request, project_id, manager=True)
    job = training.training_job_cancel(job=get_object_or_404(TrainingJob, pk=job_id, project=project))
    if request.htmx:
        context = {"project": project, "role": role, "job": job, "base_label": registry.base_aligner_name(project)}
        return render(request, "annotation/project_models.html#job", context)
    return redirect("annotation:project_models", project_id=project.pk)


@require_POST
def version_promote(request: HttpRequest, project_id: int, version_id: int) -> HttpResponse:
    project, _ = _project(request, project_id, manager=True)
    version = get_object_or_404(ModelVersion, pk=version_id, project=project)
    form = PromoteForm(request.POST)
    force = form.is_valid() and form.cleaned_data["force"]
    reason = form.cleaned_data.get("reason", "") if form.is_valid() else ""
    try:
        activation = registry.version_promote(
            version=version, by=request.user, build_measure=run_measure, force=force, reason=reason, device=settings.ENCODER_DEVICE
        )
    except ValueError as error:
        hint = ""
        if reason.strip() and not force:  # a reason alone forces nothing: say which box does
            hint = " You gave a reason but did not tick “even if not better”: tick it too to force the promotion."
        messages.error(request, f"{error}{hint}")
    else:
        messages.success(request, f"{version} is active ({activation.get_action_display()}); re-aligning the project's pairs.")
    return redirect("annotation:project_models", project_id=project.pk)


@require_POST
def version_rollback(request: HttpRequest, project_id: int) -> HttpResponse:
    project, _ = _project(request, project_id, manager=True)
    try:
        activation = registry.version_rollback(project=project, by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        name = registry.version_name(project, activation.version)
        before = ModelActivation.objects.filter(project=project, pk__lt=activation.pk).order_by("-pk").first()
        if before is not None and before.action == ModelActivation.Action.ROLLBACK:  # a rollback of a rollback
            messages.success(
                request, f"The rollback is undone: {name} is active again, a re-promotion; re-aligning the project's pairs with it."
            )
        else:
            messages.success(request, f"Rolled back to {name}; re-aligning the project's pairs with it.")
    return redirect("annotation:project_models", project_id=project.pk)
