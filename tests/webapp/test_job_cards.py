"""Every job page shows its jobs through the one job card (jobs/_card.html): status, the job-meta line,
the reason a job failed, cancel while active, polling only while active, a retry button once it failed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import reverse
from django.utils import timezone

from alignment import services as alignment_services
from alignment.aligning.service import alignment_run_create
from alignment.mining.models import MiningJob
from alignment.mining.service import mining_job_create
from alignment.models import AlignmentRun, EmbeddingRun
from alignment.services import corpus_get_or_create
from webapp.webhooks import services as webhook_services
from webapp.webhooks.models import WebhookDelivery

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the labelled project (for a webhook)
pytestmark = pytest.mark.django_db

REASON = "RuntimeError: the disk is full (job card test)"


@dataclass
class Shown:
    job: object
    url: str
    id_prefix: str
    polls: bool  # the card refreshes itself (a page of one job); list pages refresh the list instead
    cancels: bool
    retry_label: str  # "" where the page offers none


def _alignment_run_page(labelled) -> Shown:
    run = alignment_run_create(corpus=labelled.pair.corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    return Shown(run, reverse("alignment:alignment_run_detail", args=[run.pk]), "run-", True, True, "Resume")


def _alignment_run_in_corpus_list(labelled) -> Shown:
    run = alignment_run_create(corpus=labelled.pair.corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    return Shown(run, reverse("alignment:corpus_detail", args=[labelled.pair.corpus_id]), "alignment-run-", False, False, "")


def _embedding_run_in_corpus_list(labelled) -> Shown:
    run = alignment_services.embedding_run_create(corpus=labelled.pair.corpus, encoder_name="all-MiniLM-L6-v2")
    return Shown(run, reverse("alignment:corpus_jobs", args=[labelled.pair.corpus_id]), "embedding-run-", False, True, "Retry")


def _mining_job_page(labelled) -> Shown:
    target, _ = corpus_get_or_create(name="Simple trams", language="en", owner=labelled.manager)
    job, _ = mining_job_create(source_corpus=labelled.pair.corpus, target_corpus=target)
    return Shown(job, reverse("alignment:mining_job", args=[job.pk]), "mining-", True, True, "")


def _webhook_delivery_log(labelled) -> Shown:
    webhook = webhook_services.webhook_create(
        project=labelled.project, url="https://receiver.example/hook", events=["label.created"], created_by=None
    )
    delivery = webhook_services.webhook_ping(webhook=webhook, by=None)
    return Shown(delivery, reverse("webhooks:webhook_log", args=[labelled.project.pk, webhook.pk]), "delivery-", False, False, "Redeliver")


PAGES: dict[str, Callable] = {
    "alignment run page": _alignment_run_page,
    "corpus page, alignment runs": _alignment_run_in_corpus_list,
    "corpus page, embedding runs": _embedding_run_in_corpus_list,
    "mining job page": _mining_job_page,
    "webhook delivery log": _webhook_delivery_log,
}


def card_of(html: str, id_prefix: str, pk: int) -> str:
    """The card's article element, from its opening tag to its end."""
    found = re.search(rf'<article class="job[^"]*" id="{id_prefix}{pk}"[^>]*>.*?</article>', html, re.DOTALL)
    assert found, f"no job card {id_prefix}{pk} on the page"
    return found.group(0)


@pytest.mark.parametrize("page", PAGES)
def test_a_running_job_shows_the_shared_card_with_status_meta_and_cancel(client, labelled_project, page):
    shown = PAGES[page](labelled_project)
    job = shown.job
    running = "pending" if isinstance(job, WebhookDelivery) else "running"  # a delivery waits between sends
    now = timezone.now()
    type(job).objects.filter(pk=job.pk).update(status=running, attempts=2, started_at=now, heartbeat_at=now)
    client.force_login(labelled_project.manager)

    card = card_of(client.get(shown.url).content.decode(), shown.id_prefix, job.pk)

    assert f"run-{running}" in card.split(">", 1)[0] and f'<span class="status status-{running}">' in card
    meta = re.search(r'<p class="small muted job-meta">(.*?)</p>', card, re.DOTALL).group(1)
    assert meta.startswith(f"{job.kind} · queued") and " · started " in meta
    if isinstance(job, WebhookDelivery):
        assert "2 attempts" in meta and "worker stopped" not in meta  # a delivery's attempts are its sends
    else:
        assert "attempt 2 (a worker stopped; the job resumed where it was)" in meta
    assert ('hx-trigger="every 1s"' in card) is shown.polls
    assert (">Cancel</button>" in card) is shown.cancels
    assert '<pre class="error">' not in card and "Retry" not in card and "Resume" not in card and "Redeliver" not in card


@pytest.mark.parametrize("page", PAGES)
def test_a_failed_job_shows_the_shared_card_with_the_reason_and_stops_polling(client, labelled_project, page):
    shown = PAGES[page](labelled_project)
    job = shown.job
    now = timezone.now()
    type(job).objects.filter(pk=job.pk).update(status="failed", attempts=1, started_at=now, finished_at=now, error=REASON)
    client.force_login(labelled_project.manager)

    html = client.get(shown.url).content.decode()
    card = card_of(html, shown.id_prefix, job.pk)

    assert "run-failed" in card.split(">", 1)[0] and '<span class="status status-failed">Failed</span>' in card
    assert f'<pre class="error">{REASON}</pre>' in card and "Traceback" not in html
    assert f"{job.kind} · queued" in card and " · finished " in card
    assert "hx-trigger" not in card and ">Cancel</button>" not in card
    if shown.retry_label:
        assert f">{shown.retry_label}</button>" in card
    else:
        assert "<button" not in card


def test_the_card_buttons_hide_from_a_viewer_who_may_not_run_jobs(client, labelled_project, outsider):
    corpus = labelled_project.pair.corpus
    type(corpus).objects.filter(pk=corpus.pk).update(is_shared=True)
    run = alignment_run_create(corpus=corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    embedding = alignment_services.embedding_run_create(corpus=corpus, encoder_name="all-MiniLM-L6-v2")
    EmbeddingRun.objects.filter(pk=embedding.pk).update(status="failed", error=REASON)
    client.force_login(outsider)

    run_card = card_of(client.get(reverse("alignment:alignment_run_detail", args=[run.pk])).content.decode(), "run-", run.pk)
    corpus_html = client.get(reverse("alignment:corpus_detail", args=[corpus.pk])).content.decode()

    assert "<button" not in run_card and 'hx-trigger="every 1s"' in run_card  # a viewer watches, but cannot cancel
    assert "<button" not in card_of(corpus_html, "embedding-run-", embedding.pk) and REASON in corpus_html


def test_cancel_from_the_run_card_answers_with_the_card_and_resume_queues_it_again(client, labelled_project):
    run = alignment_run_create(corpus=labelled_project.pair.corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    client.force_login(labelled_project.manager)

    fragment = client.post(reverse("alignment:alignment_run_cancel", args=[run.pk]), headers={"HX-Request": "true"}).content.decode()

    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and "<html" not in fragment
    card = card_of(fragment, "run-", run.pk)
    assert "status-cancelled" in card and "hx-trigger" not in card and ">Resume</button>" in card
    assert f'hx-post="{reverse("alignment:alignment_run_resume", args=[run.pk])}" hx-target="#run-{run.pk}"' in card


def test_cancel_from_the_mining_card_answers_with_the_card_not_a_redirect(client, labelled_project):
    target, _ = corpus_get_or_create(name="Simple trams", language="en", owner=labelled_project.manager)
    job, _ = mining_job_create(source_corpus=labelled_project.pair.corpus, target_corpus=target)
    MiningJob.objects.filter(pk=job.pk).update(status="running")
    client.force_login(labelled_project.manager)

    response = client.post(reverse("alignment:mining_job_cancel", args=[job.pk]), headers={"HX-Request": "true"})

    job.refresh_from_db()
    assert response.status_code == 200 and job.cancel_requested
    card = card_of(response.content.decode(), "mining-", job.pk)
    assert "<html" not in response.content.decode() and "stopping after the step in flight" in card and ">Cancel</button>" not in card
    assert client.post(reverse("alignment:mining_job_cancel", args=[job.pk])).status_code == 302  # without htmx: back to the page


def test_redeliver_from_a_delivery_card_keeps_the_log_page(client, labelled_project, django_capture_on_commit_callbacks):
    webhook = webhook_services.webhook_create(
        project=labelled_project.project, url="https://receiver.example/hook", events=["label.created"], created_by=None
    )
    deliveries = [webhook_services.webhook_ping(webhook=webhook, by=None) for _ in range(12)]
    oldest = deliveries[0]
    WebhookDelivery.objects.filter(pk__in=[d.pk for d in deliveries]).update(status="succeeded")
    WebhookDelivery.objects.filter(pk=oldest.pk).update(status="failed", attempts=6, error=REASON)
    client.force_login(labelled_project.manager)
    log_url = reverse("webhooks:webhook_log", args=[labelled_project.project.pk, webhook.pk])

    card = card_of(client.get(log_url, {"page": 2}).content.decode(), "delivery-", oldest.pk)
    redeliver = reverse("webhooks:delivery_redeliver", args=[labelled_project.project.pk, webhook.pk, oldest.pk]) + "?page=2"
    assert f'hx-post="{redeliver}" hx-target="#log-{webhook.pk}"' in card
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(redeliver, headers={"HX-Request": "true"})

    html = response.content.decode()
    assert response.status_code == 200 and "queued again" in html and "page 2 of 2" in html
    assert 'hx-trigger="every 2s"' in html and "status-pending" in card_of(html, "delivery-", oldest.pk)
