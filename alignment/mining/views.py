"""Mining pages: start an LHA job from a corpus, follow it live, browse and filter what it found. Thin."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from alignment import selectors
from alignment.errors import bad_request, form_error
from alignment.mining import browse
from alignment.mining.models import MiningJob
from alignment.mining.selectors import mining_jobs_visible_to
from alignment.mining.service import mining_job_cancel, mining_job_statistics
from alignment.mining.starting import mining_control_require, mining_form, mining_job_start


def _job_for_user(request: HttpRequest, job_id: int) -> MiningJob:
    return get_object_or_404(mining_jobs_visible_to(request.user), pk=job_id)


def _require_job_control(request: HttpRequest, corpus) -> None:
    """Mining jobs belong to their source corpus: as for alignment runs, its owner and staff start and cancel them."""
    try:
        mining_control_require(user=request.user, corpus=corpus)
    except PermissionError as refusal:
        raise PermissionDenied(str(refusal)) from None


def mining_start(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    method = request.POST.get("method", "lha")
    posted = request.POST if request.method == "POST" else None
    form = mining_form(corpus=corpus, method="lha", user=request.user, data=posted if method == "lha" else None)
    muss_form = mining_form(corpus=corpus, method="muss", user=request.user, data=posted if method == "muss" else None)
    chosen = form if method == "lha" else muss_form
    if request.method == "POST":
        _require_job_control(request, corpus)
    if request.method == "POST" and chosen.is_valid():  # every bad field shows on the page; the service checks again
        try:  # the bound form's data: the form's fields only (the POST has the CSRF token and the method too)
            job, created = mining_job_start(corpus=corpus, method=method, data=chosen.data, user=request.user)
        except ValueError as error:
            form_error(chosen, error)
        else:
            messages.success(request, f"Mining job {job.pk} {'queued' if created else 'already exists with these settings'}.")
            return redirect("alignment:mining_job", job_id=job.pk)
    jobs = MiningJob.objects.filter(source_corpus=corpus).select_related("target_corpus").defer("lexical_idf")[:20]
    return render(request, "alignment/mining_start.html", {"corpus": corpus, "form": form, "muss_form": muss_form, "jobs": jobs})


def _pairs_context(request: HttpRequest, job: MiningJob, query: QueryDict) -> dict:
    """What the pairs table needs: ``query`` holds the filters (FilterError on a bad one)."""
    filters = browse.filters_from(query)
    page = Paginator(browse.mined_pairs(job, filters), 50).get_page(query.get("page"))
    depth_missing = job.method == MiningJob.Method.MUSS and any(pair.features.get("dependency_depth_ratio") is None for pair in page)
    return {"job": job, "page": page, "filters": filters, "query": query.urlencode(), "depth_missing": depth_missing,
            "may_send": request.user.is_staff or job.source_corpus.owner_id == request.user.pk}  # fmt: skip


def mining_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    try:
        context = _pairs_context(request, job, request.GET)
    except browse.FilterError as error:  # the site's error page naming the field (escaped: the message quotes the input)
        return bad_request(request, f"The filter {error}. Change it and filter again.")
    context.update({"stats": mining_job_statistics(job), "sorts": browse.SORT_NAMES.items(), "shapes": browse.SHAPES,
                    "may_control": selectors.user_may_run_jobs(request.user, job.source_corpus)})  # fmt: skip
    template = "alignment/mining_job.html#pairs" if request.htmx and request.htmx.target == "pairs" else "alignment/mining_job.html"
    return render(request, template, context)


def mining_job_progress(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job card; once the job has ended, the pairs table too (out of band), filtered as the page is,
    so the table never says "No pairs yet" beside a card that counts them."""
    job = _job_for_user(request, job_id)
    context = {"job": job, "stats": mining_job_statistics(job), "may_control": selectors.user_may_run_jobs(request.user, job.source_corpus)}
    html = render_to_string("alignment/mining_job.html#progress", context, request)
    if request.htmx and not job.is_active:
        page_query = QueryDict(urlsplit(request.htmx.current_url or "").query)
        try:
            pairs = _pairs_context(request, job, page_query)
        except browse.FilterError:  # the page itself answered 400 to those filters; show them unfiltered
            pairs = _pairs_context(request, job, QueryDict())
        html += render_to_string("alignment/mining_job.html#pairs", {**pairs, "out_of_band": True}, request)
    return HttpResponse(html)


@require_POST
def mining_job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    _require_job_control(request, job.source_corpus)
    job = mining_job_cancel(job=job)
    if request.htmx:  # the job card's button: answer with the card
        return mining_job_progress(request, job.pk)
    messages.info(request, f"Mining job {job.pk}: shards stop after the document in flight.")
    return redirect("alignment:mining_job", job_id=job.pk)
