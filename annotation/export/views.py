"""The project's Exports page: start an export, watch it run, download its files. Managers only; thin."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation import selectors
from annotation.export.forms import ExportForm
from annotation.export.models import ExportJob
from annotation.export.service import export_job_cancel, export_job_create
from annotation.models import AnnotationProject, ProjectMembership


def _project(request: HttpRequest, project_id: int) -> AnnotationProject:
    """404 without a role in the project, 403 for anyone but its managers."""
    project, role = selectors.project_get_for_user(request.user, project_id)
    if role != ProjectMembership.Role.MANAGER:
        raise PermissionDenied("exports are for the project's managers")
    return project


def project_exports(request: HttpRequest, project_id: int) -> HttpResponse:
    project = _project(request, project_id)
    jobs = ExportJob.objects.filter(project=project).select_related("created_by")[:20]
    return render(request, "annotation/project_exports.html", {"project": project, "form": ExportForm(), "jobs": jobs})


@require_POST
def export_start(request: HttpRequest, project_id: int) -> HttpResponse:
    project = _project(request, project_id)
    form = ExportForm(request.POST)
    if form.is_valid():
        try:
            job = export_job_create(project=project, created_by=request.user, **form.options())
        except ValueError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"Export job {job.pk} queued.")
    else:
        messages.error(request, "; ".join(f"{field}: {', '.join(errors)}" for field, errors in form.errors.items()))
    return redirect("annotation:project_exports", project_id=project.pk)


def export_job_card(request: HttpRequest, project_id: int, job_id: int) -> HttpResponse:
    """One job's card: polled by htmx while the job is queued or running."""
    project = _project(request, project_id)
    job = get_object_or_404(ExportJob, pk=job_id, project=project)
    return render(request, "annotation/project_exports.html#job", {"project": project, "job": job})


@require_POST
def export_job_cancel_view(request: HttpRequest, project_id: int, job_id: int) -> HttpResponse:
    """The card's *Cancel* (the project's managers): the card again, or the page without htmx."""
    project = _project(request, project_id)
    export_job_cancel(job=get_object_or_404(ExportJob, pk=job_id, project=project))
    if request.htmx:
        return export_job_card(request, project_id, job_id)
    return redirect("annotation:project_exports", project_id=project.pk)


def export_file(request: HttpRequest, project_id: int, job_id: int, name: str) -> FileResponse:
    project = _project(request, project_id)
    job = get_object_or_404(ExportJob, pk=job_id, project=project)
    path = job.file_path(name)
    if path is None or not path.is_file():
        raise Http404("no such file in this export")
    download = f"export-{project.pk}-{job.pk}.zip" if name == "export.zip" else name.replace("/", "-")
    return FileResponse(path.open("rb"), as_attachment=True, filename=download)
