"""The Import page, its preview and its job page: the upload is checked and staged in the request, imported by a worker."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from alignment import selectors
from alignment.errors import form_error
from alignment.forms import CorpusImportForm, CorpusImportPreviewForm
from alignment.importing.jobs import import_job_cancel, import_job_create
from alignment.importing.models import ImportJob
from alignment.importing.preview import ImportPreview, import_preview
from alignment.importing.uploads import ImportUploadLimit, import_upload_guard, takes_uploads
from alignment.level_order import corpus_readability, level_order_constraints


@takes_uploads
@csrf_exempt  # the CSRF check reads the body, so it runs in _corpus_import, after the upload limit is installed
@require_http_methods(["GET", "POST"])
def corpus_import(request: HttpRequest) -> HttpResponse:
    limit = import_upload_guard(request)
    if limit.refusal:  # the body announced too many bytes: answer before the CSRF check would read it
        return _corpus_import_page(request, CorpusImportForm(), upload_error=limit.refusal, status=413)
    return _corpus_import(request, limit)


@csrf_protect
def _corpus_import(request: HttpRequest, limit: ImportUploadLimit) -> HttpResponse:
    uploaded = request.FILES if request.method == "POST" else None  # the body is parsed here, through the limit
    if limit.refusal:
        return _corpus_import_page(request, CorpusImportForm(initial=request.POST.dict()), upload_error=limit.refusal, status=413)
    form = CorpusImportForm(request.POST or None, uploaded or None, initial={"corpus_name": request.GET.get("corpus", "")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = import_job_create(
                user=request.user, corpus_name=data["corpus_name"], language=data["language"], pairing=data["pairing"],
                options=form.import_options(max_file_bytes=settings.IMPORT_MAX_FILE_BYTES),
                files=((f.name, f.read()) for f in data["files"]),
            )  # fmt: skip
        except ValueError as error:  # the corpus was refused: on the field it is about
            form_error(form, error)
        else:
            return redirect("alignment:import_job", job_id=job.pk)
    return _corpus_import_page(request, form)


def _corpus_import_page(
    request: HttpRequest, form: CorpusImportForm, *, upload_error: str = "", preview: ImportPreview | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "form": form, "upload_error": upload_error, "corpus_names": selectors.corpus_names_for_import(request.user),
        "recent_jobs": ImportJob.objects.filter(created_by=request.user)[:5], "preview": preview,
    }  # fmt: skip
    return render(request, "alignment/corpus_import.html", context, status=status)


@takes_uploads
@csrf_exempt  # as corpus_import: the CSRF check runs in _corpus_import_preview, after the upload limit is installed
@require_POST
def corpus_import_preview(request: HttpRequest) -> HttpResponse:
    """The first document of the chosen files, read as the import would read it; nothing is stored.

    htmx swaps the preview panel (and the paragraph mode field, which the panel's switch button sets);
    without JavaScript the whole Import page comes back with the preview below the form.
    """
    limit = import_upload_guard(request)
    if limit.refusal:
        return _corpus_import_preview_page(request, CorpusImportPreviewForm(), upload_error=limit.refusal, status=413)
    return _corpus_import_preview(request, limit)


@csrf_protect
def _corpus_import_preview(request: HttpRequest, limit: ImportUploadLimit) -> HttpResponse:
    uploaded = request.FILES  # the body is parsed here, through the limit
    if limit.refusal:
        form = CorpusImportPreviewForm(initial=request.POST.dict())
        return _corpus_import_preview_page(request, form, upload_error=limit.refusal, status=413)
    form = CorpusImportPreviewForm(request.POST, uploaded)
    preview = None
    if form.is_valid():
        options = form.import_options(max_file_bytes=settings.IMPORT_MAX_FILE_BYTES)
        try:  # the target corpus's pairs keep their direction: the preview shows what the import will do
            corpus = selectors.corpus_for_import(request.user, form.cleaned_data["corpus_name"])
            constraints = level_order_constraints(corpus, options.level_order)
        except ValueError as error:
            form_error(form, error)
        else:
            preview = import_preview(
                files=((f.name, f.read()) for f in form.cleaned_data["files"]), options=options, pairing=form.cleaned_data["pairing"],
                constraints=constraints, stored_readability=corpus_readability(corpus) if corpus else None,
            )  # fmt: skip
            if preview.direction and not options.level_order:
                form.suggest_level_order(preview.direction.order)
    return _corpus_import_preview_page(request, form, preview=preview)


def _corpus_import_preview_page(
    request: HttpRequest, form: CorpusImportForm, *, upload_error: str = "", preview: ImportPreview | None = None, status: int = 200
) -> HttpResponse:
    if not request.htmx:
        return _corpus_import_page(request, form, upload_error=upload_error, preview=preview, status=status)
    context = {"form": form, "upload_error": upload_error, "preview": preview, "preview_only": True}
    return render(request, "alignment/corpus_import.html#preview", context, status=status)


@require_GET
def import_job(request: HttpRequest, job_id: int) -> HttpResponse:
    """An import job's page: its card polls (htmx swaps the card) until the job ends, then shows the report."""
    job = get_object_or_404(selectors.import_jobs_for_user(request.user).select_related("embedding_run", "alignment_run"), pk=job_id)
    template = "alignment/import_job.html#job" if request.htmx else "alignment/import_job.html"
    return render(request, template, {"job": job})


@require_POST
def import_job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job card's *Cancel*: whoever may see the job (who started it, and staff) may cancel it."""
    import_job_cancel(job=get_object_or_404(selectors.import_jobs_for_user(request.user), pk=job_id))
    if request.htmx:
        return import_job(request, job_id)
    return redirect("alignment:import_job", job_id=job_id)
