"""Mining pages: start an LHA job from a corpus, follow it live, browse and filter what it found. Thin."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from alignment import selectors
from alignment.mining import browse
from alignment.mining.forms import MiningJobForm, MussJobForm
from alignment.mining.models import MiningJob
from alignment.mining.service import (
    mining_job_cancel,
    mining_job_create,
    mining_job_statistics,
)


def _job_for_user(request: HttpRequest, job_id: int) -> MiningJob:
    visible = selectors.corpora_visible_to(request.user)
    return get_object_or_404(
        MiningJob.objects.select_related("source_corpus", "target_corpus"), pk=job_id, source_corpus__in=visible, target_corpus__in=visible
    )


def _require_job_control(request: HttpRequest, corpus) -> None:
    """Mining jobs belong to their source corpus: as for alignment runs, its owner and staff start and cancel them."""
    if not selectors.user_may_run_jobs(request.user, corpus):
        raise PermissionDenied(f"only the owner of corpus {corpus.name!r} and staff start or cancel its mining jobs")


def mining_start(request: HttpRequest, corpus_id: int) -> HttpResponse:
    corpus = selectors.corpus_get_for_user(request.user, corpus_id)
    targets = selectors.corpora_visible_to(request.user).exclude(pk=corpus.pk)
    method = request.POST.get("method", "lha")
    posted = request.POST if request.method == "POST" else None
    form = MiningJobForm(posted if method == "lha" else None, targets=targets)
    muss_form = MussJobForm(posted if method == "muss" else None)
    chosen = form if method == "lha" else muss_form
    if request.method == "POST":
        _require_job_control(request, corpus)
    if request.method == "POST" and chosen.is_valid():
        data = dict(chosen.cleaned_data)
        target = data.pop("target_corpus", None)
        try:
            job, created = mining_job_create(
                source_corpus=corpus, target_corpus=target, config=data, method=method, created_by=request.user
            )
        except ValueError as error:
            chosen.add_error(None, str(error))
        else:
            messages.success(request, f"Mining job {job.pk} {'queued' if created else 'already exists with these settings'}.")
            return redirect("alignment:mining_job", job_id=job.pk)
    jobs = MiningJob.objects.filter(source_corpus=corpus).select_related("target_corpus")[:20]
    return render(request, "alignment/mining_start.html", {"corpus": corpus, "form": form, "muss_form": muss_form, "jobs": jobs})


def mining_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    try:
        filters = browse.filters_from(request.GET)
    except browse.FilterError as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")  # the message quotes the input
    page = Paginator(browse.mined_pairs(job, filters), 50).get_page(request.GET.get("page"))
    context = {"job": job, "stats": mining_job_statistics(job), "page": page, "filters": filters,
               "sorts": list(browse.SORTS), "shapes": browse.SHAPES, "query": request.GET.urlencode(),
               "may_send": request.user.is_staff or job.source_corpus.owner_id == request.user.pk,
               "may_control": selectors.user_may_run_jobs(request.user, job.source_corpus)}  # fmt: skip
    template = "alignment/mining_job.html#pairs" if request.htmx and request.htmx.target == "pairs" else "alignment/mining_job.html"
    return render(request, template, context)


def mining_job_progress(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    context = {"job": job, "stats": mining_job_statistics(job), "may_control": selectors.user_may_run_jobs(request.user, job.source_corpus)}
    return render(request, "alignment/mining_job.html#progress", context)


@require_POST
def mining_job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job_for_user(request, job_id)
    _require_job_control(request, job.source_corpus)
    job = mining_job_cancel(job=job)
    if request.htmx:  # the job card's button: answer with the card
        return mining_job_progress(request, job.pk)
    messages.info(request, f"Mining job {job.pk}: shards stop after the document in flight.")
    return redirect("alignment:mining_job", job_id=job.pk)
