"""HTML pages for corpora, imports, embedding jobs and document pairs. Thin: selectors read, services write."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from alignment import selectors, services
from alignment.forms import CorpusImportForm
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import EmbeddingRun


def corpus_list(request: HttpRequest) -> HttpResponse:
    corpora = selectors.corpus_list_with_counts(request.user)
    return render(request, "alignment/corpus_list.html", {"corpora": corpora})


def corpus_detail(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    context = {
        "corpus": corpus,
        "documents": corpus.documents.order_by("external_id", "level").only("id", "external_id", "title", "level", "source"),
        "pairs": corpus.pairs.select_related("complex_document", "simple_document"),
        **_jobs_context(corpus),
    }
    return render(request, "alignment/corpus_detail.html", context)


def corpus_jobs(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """The job-status fragment; it polls itself while a run is queued or running."""
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    return render(request, "alignment/corpus_detail.html#jobs", {"corpus": corpus, **_jobs_context(corpus)})


def _jobs_context(corpus) -> dict:
    runs = list(corpus.embedding_runs.all()[:5])
    return {
        "runs": runs,
        "jobs_active": any(run.is_active for run in runs),
        "sentence_count": selectors.corpus_sentence_count(corpus),
        "embedding_counts": selectors.corpus_embedding_counts(corpus),
        "encoder_name": settings.ENCODER_MODEL,
    }


@require_POST
def corpus_embed(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=request.user)
    if request.htmx:
        return corpus_jobs(request, corpus_id)
    return redirect("alignment:corpus_detail", corpus_id=corpus.pk)


@require_POST
def embedding_run_retry(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.embedding_run_get_for_user(request.user, run_id)
    if run.status == EmbeddingRun.Status.FAILED:
        services.embedding_run_retry(run=run)
    if request.htmx:
        return corpus_jobs(request, run.corpus_id)
    return redirect("alignment:corpus_detail", corpus_id=run.corpus_id)


@require_http_methods(["GET", "POST"])
def corpus_import(request: HttpRequest) -> HttpResponse:
    form = CorpusImportForm(request.POST or None, request.FILES or None, initial={"corpus_name": request.GET.get("corpus", "")})
    report = None
    corpus = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            options = ImportOptions(
                format=data["format"],
                language=data["language"],
                paragraph_mode=data["paragraph_mode"],
                filename_pattern=data["filename_pattern"],
                drop_level_header=data["drop_level_header"],
                max_file_bytes=settings.IMPORT_MAX_FILE_BYTES,
            )
            corpus = selectors.corpus_for_import(request.user, data["corpus_name"])
            if corpus is None:
                corpus, _ = services.corpus_get_or_create(
                    name=data["corpus_name"], language=data["language"], owner=request.user, pairing=data["pairing"]
                )
            elif corpus.language != data["language"]:
                raise ValueError(f"corpus {corpus.name!r} is in {corpus.language!r}, not {data['language']!r}")
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            files = ((f.name, f.read()) for f in data["files"])
            report = corpus_import_files(corpus=corpus, files=files, options=options)
            if report.documents_created:
                services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=request.user)
            if not report.errors:
                messages.success(request, f"Imported {report.documents_created} documents into {corpus.name}.")
    context = {"form": form, "report": report, "corpus": corpus, "corpus_names": selectors.corpus_names_for_import(request.user)}
    return render(request, "alignment/corpus_import.html", context)


def pair_detail(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = selectors.pair_get_for_user(request.user, pair_id)
    context = {
        "pair": pair,
        "corpus": pair.corpus,
        "complex_paragraphs": selectors.document_paragraphs(pair.complex_document_id),
        "simple_paragraphs": selectors.document_paragraphs(pair.simple_document_id),
    }
    return render(request, "alignment/pair_detail.html", context)
