"""Mining pages: start an LHA job from a corpus, follow it live, browse and filter what it found. Thin."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
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
from alignment.mining.forms import MiningJobForm, MussJobForm
from alignment.mining.models import MiningJob
from alignment.mining.service import (
    corpora_ready_for_mining,
    mining_job_cancel,
    mining_job_create,
    mining_job_statistics,
)


def _job_for_user(request: HttpRequest, job_id: int) -> MiningJob:
    visible = selectors.corpora_visible_to(request.user)
    return get_object_or_404(
        MiningJob.objects.select_related("source_corpus", "target_corpus").defer("lexical_idf"),
        pk=job_id,
        source_corpus__in=visible,
        target_corpus__in=visible,
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
    language = {"language": corpus.language.split("-")[0]} if corpus.language.split("-")[0] in ("en", "de") else {}
    form = MiningJobForm(posted if method == "lha" else None, targets=targets, initial=language)
    muss_form = MussJobForm(posted if method == "muss" else None, initial=language)
    chosen = form if method == "lha" else muss_form
    if request.method == "POST":
        _require_job_control(request, corpus)
    if request.method == "POST" and chosen.is_valid():
        data = dict(chosen.cleaned_data)
        target = data.pop("target_corpus", None)
        # empty: the retrieval's own default (by the corpus's language; its thresholds); LHA's empty filters stay None (off)
        defaulted = set(data) if method == "muss" else {"retrieval", "theta_d", "theta_s"}
        data = {key: value for key, value in data.items() if key not in defaulted or value not in ("", None)}
        try:
            encoder = settings.ENCODER_MODEL if method == "lha" else None  # LHA reads stored vectors
            fields = {target.pk: "target_corpus"} if target is not None and target.pk != corpus.pk else None
            corpora_ready_for_mining(corpora=[corpus, target or corpus], encoder_name=encoder, field_by_corpus=fields)
            job, created = mining_job_create(
                source_corpus=corpus, target_corpus=target, config=data, method=method, created_by=request.user
            )
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
