"""HTML pages for corpora, embedding jobs and document pairs (imports: import_views.py). Thin: selectors read, services write."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from alignment import selectors, services
from alignment.aligning import service as aligning
from alignment.errors import error_answer, form_error
from alignment.forms import AlignmentRunForm, CorpusLanguageForm
from alignment.level_order import corpus_direction
from alignment.models import AlignmentRun, EmbeddingRun
from alignment.paging import ListPage, in_order, list_page
from alignment.pairs_flip import corpus_pairs_flip


def corpus_list(request: HttpRequest) -> HttpResponse:
    corpora = selectors.corpus_list_with_counts(request.user)
    return render(request, "alignment/corpus_list.html", {"corpora": corpora})


def corpus_detail(request: HttpRequest, corpus_id: int) -> HttpResponse:
    return _corpus_page(request, selectors.corpus_get_for_user(request.user, corpus_id))


def _corpus_page(request: HttpRequest, corpus, *, language_form: CorpusLanguageForm | None = None, status: int = 200) -> HttpResponse:
    """The corpus: counts, language, jobs, and a page each of its pairs and its documents (``pairs_page``, ``documents_page``)."""
    documents = corpus.documents.order_by("external_id", "level", "pk").only("id", "corpus_id", "external_id", "title", "level", "source")
    pairs = corpus.pairs.order_by(*selectors.PAIR_ORDER).values_list("pk", flat=True)
    context = {
        "corpus": corpus,
        "language_form": language_form or CorpusLanguageForm(initial={"language": corpus.language}),
        "documents": list_page(request.GET, documents, param="documents_page", anchor="documents"),
        "pairs": list_page(request.GET, pairs, param="pairs_page", anchor="pairs", present=selectors.pairs_in_order),
        "run_form": AlignmentRunForm(),
        "direction": corpus_direction(corpus),
        **_jobs_context(request, corpus),
    }
    return render(request, "alignment/corpus_detail.html", context, status=status)


@require_POST
def corpus_language(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """Change the corpus's language (the owner and staff); a refused code shows on the field, nothing changed (400)."""
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    if not selectors.user_may_run_jobs(request.user, corpus):  # the same people who run its jobs
        raise PermissionDenied(f"only the owner of corpus {corpus.name!r} and staff change its language")
    form = CorpusLanguageForm(request.POST)
    if form.is_valid():
        try:
            services.corpus_language_set(corpus=corpus, language=form.cleaned_data["language"])
        except ValueError as error:  # the service refused before changing anything
            form_error(form, error)
    status = 400 if form.errors else 200
    if request.htmx:
        context = {"corpus": corpus, "language_form": form, "may_control": True, "oob": not form.errors}
        return render(request, "alignment/corpus_detail.html#language", context, status=status)
    if form.errors:
        return _corpus_page(request, corpus, language_form=form, status=status)
    messages.success(request, f"The language of {corpus.name} is now {corpus.language}.")
    return redirect("alignment:corpus_detail", corpus_id=corpus.pk)


def corpus_jobs(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """The job-status fragment; it polls itself while a run is queued or running."""
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    return render(request, "alignment/corpus_detail.html#jobs", {"corpus": corpus, **_jobs_context(request, corpus)})


def _jobs_context(request: HttpRequest, corpus) -> dict:
    runs = list(corpus.embedding_runs.all()[:5])
    alignment_runs = selectors.alignment_runs_recent(corpus)
    sentence_count, embedding_counts = selectors.corpus_counts(corpus)
    embedded = next((row["vectors"] for row in embedding_counts if row["encoder__name"] == settings.ENCODER_MODEL), 0)
    return {
        "runs": runs,
        "alignment_runs": alignment_runs,
        "jobs_active": any(run.is_active for run in [*runs, *alignment_runs]),
        "sentence_count": sentence_count,
        "embedding_counts": embedding_counts,
        "missing_vectors": max(0, sentence_count - embedded),  # of the configured encoder: what *Embed missing* would embed
        "encoder_name": settings.ENCODER_MODEL,
        "may_control": selectors.user_may_run_jobs(request.user, corpus),
    }


@require_POST
def corpus_embed(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = _corpus_for_jobs(request, corpus_id)
    services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=request.user)
    if request.htmx:
        return corpus_jobs(request, corpus_id)
    return redirect("alignment:corpus_detail", corpus_id=corpus.pk)


@require_POST
def embedding_run_retry(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.embedding_run_get_for_user(request.user, run_id)
    _corpus_for_jobs(request, run.corpus_id)
    if run.status in (EmbeddingRun.Status.FAILED, EmbeddingRun.Status.CANCELLED):
        services.embedding_run_retry(run=run)
    if request.htmx:
        return corpus_jobs(request, run.corpus_id)
    return redirect("alignment:corpus_detail", corpus_id=run.corpus_id)


@require_POST
def embedding_run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.embedding_run_get_for_user(request.user, run_id)
    _corpus_for_jobs(request, run.corpus_id)
    services.embedding_run_cancel(run=run)  # a finished run stays as it is
    if request.htmx:
        return corpus_jobs(request, run.corpus_id)
    return redirect("alignment:corpus_detail", corpus_id=run.corpus_id)


def pair_detail(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = selectors.pair_get_for_user(request.user, pair_id)
    context = {
        "pair": pair,
        "corpus": pair.corpus,
        "complex_paragraphs": selectors.document_paragraphs(pair.complex_document_id),
        "simple_paragraphs": selectors.document_paragraphs(pair.simple_document_id),
        "run_form": AlignmentRunForm(),
        "may_control": selectors.user_may_run_jobs(request.user, pair.corpus),
    }
    return render(request, "alignment/pair_detail.html", context)


def _corpus_for_jobs(request: HttpRequest, corpus_id: int):
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    if not selectors.user_may_run_jobs(request.user, corpus):
        raise PermissionDenied(f"only the owner of corpus {corpus.name!r} and staff start or stop its jobs (embedding, alignment, mining)")
    return corpus


def _start_run(request: HttpRequest, corpus, pairs=None) -> HttpResponse | None:
    form = AlignmentRunForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(messages_)}" for field, messages_ in form.errors.items())
        messages.error(request, f"The run was not started: {errors}")
        return None
    try:
        run = aligning.alignment_run_create(
            corpus=corpus, pairs=pairs, created_by=request.user, model_dir=settings.ALIGNER_MODEL_DIR, **form.run_arguments()
        )
    except ValueError as exc:
        messages.error(request, f"The run was not started: {exc}")
        return None
    return redirect("alignment:alignment_run_detail", run_id=run.pk)


@require_POST
def corpus_align(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = _corpus_for_jobs(request, corpus_id)
    return _start_run(request, corpus) or redirect("alignment:corpus_detail", corpus_id=corpus.pk)


@require_POST
def corpus_flip(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """Turn the corpus's level pairs round (alignment/pairs_flip.py); a refusal says why and changes nothing."""
    corpus = _corpus_for_jobs(request, corpus_id)
    try:
        outcome = corpus_pairs_flip(corpus=corpus, created_by=request.user)
    except ValueError as error:
        messages.error(request, error_answer(error).message)
    else:
        queued = f"; alignment run #{outcome.alignment_run.pk} aligns them again" if outcome.alignment_run else ""
        messages.success(
            request,
            f"Flipped {outcome.pairs_flipped} pair{pluralize(outcome.pairs_flipped)}: {' → '.join(outcome.order_after)} "
            f"(complex → simple); {outcome.results_removed} alignment result{pluralize(outcome.results_removed)} "
            f"of the old direction removed{queued}.",
        )
    return redirect("alignment:corpus_detail", corpus_id=corpus.pk)


@require_POST
def pair_align(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = selectors.pair_get_for_user(request.user, pair_id)
    corpus = _corpus_for_jobs(request, pair.corpus_id)
    return _start_run(request, corpus, pairs=[pair]) or redirect("alignment:pair_detail", pair_id=pair.pk)


def alignment_run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.alignment_run_get_for_user(request.user, run_id)
    context = {
        "run": run,
        "corpus": run.corpus,
        "pairs": _run_pairs(request, run),
        "poll_url": _run_poll_url(request, run),
        "may_control": selectors.user_may_run_jobs(request.user, run.corpus),
    }
    return render(request, "alignment/alignment_run_detail.html", context)


def alignment_run_progress(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run's progress fragment, which polls itself while the run is queued or running, and the page of pairs on screen
    out of band, so each pair turns from pending to done as the card counts it (the last poll brings the final table)."""
    run = selectors.alignment_run_get_for_user(request.user, run_id)
    context = {"run": run, "poll_url": _run_poll_url(request, run), "may_control": selectors.user_may_run_jobs(request.user, run.corpus)}
    html = render_to_string("alignment/alignment_run_detail.html#progress", context, request)
    pairs = {"run": run, "pairs": _run_pairs(request, run), "out_of_band": True}
    return HttpResponse(html + render_to_string("alignment/alignment_run_detail.html#pairs", pairs, request))


def _run_pairs(request: HttpRequest, run: AlignmentRun) -> ListPage:
    rows = selectors.alignment_run_pairs(run)
    ids = run.pairs.order_by("pk").values_list("pk", flat=True)
    return list_page(request.GET, ids, param="pairs_page", anchor="run-pairs", present=lambda page: in_order(rows, page))


def _run_poll_url(request: HttpRequest, run: AlignmentRun) -> str:
    """The progress fragment's URL, with the page of pairs on screen, so that polling keeps that page."""
    url = reverse("alignment:alignment_run_progress", args=[run.pk])
    page = request.GET.get("pairs_page", "")
    return f"{url}?pairs_page={page}" if page.isdigit() else url


@require_POST
def alignment_run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.alignment_run_get_for_user(request.user, run_id)
    _corpus_for_jobs(request, run.corpus_id)
    aligning.alignment_run_cancel(run=run)
    if request.htmx:
        return alignment_run_progress(request, run_id)
    return redirect("alignment:alignment_run_detail", run_id=run.pk)


@require_POST
def alignment_run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.alignment_run_get_for_user(request.user, run_id)
    _corpus_for_jobs(request, run.corpus_id)
    if run.status in (AlignmentRun.Status.FAILED, AlignmentRun.Status.CANCELLED):
        aligning.alignment_run_retry(run=run)
    if request.htmx:
        return alignment_run_progress(request, run_id)
    return redirect("alignment:alignment_run_detail", run_id=run.pk)
