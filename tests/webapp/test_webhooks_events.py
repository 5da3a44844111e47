"""Where webhook events come from: label history, finished alignment runs, finished exports; only after commit."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.db import transaction
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.aligning import service as aligning
from alignment.services import corpus_get_or_create
from annotation import services as annotation_services
from annotation.export.signals import export_finished
from annotation.models import LabelEvent
from webapp.webhooks import services
from webapp.webhooks.delivery import webhook_delivery_attempt
from webapp.webhooks.events import export_download_path
from webapp.webhooks.models import WebhookDelivery

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the HTTP receiver and the labelled project
pytestmark = pytest.mark.django_db

ALL_EVENTS = ["label.created", "label.changed", "run.finished", "export.ready"]


def hook(project, events, url="https://receiver.example/hook", active=True):
    webhook = services.webhook_create(project=project.project, url=url, events=events, created_by=project.manager)
    if not active:
        services.webhook_set_active(webhook=webhook, active=False)
    return webhook


def queued(delivery: WebhookDelivery) -> bool:
    return ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver", args={"delivery_id": delivery.pk}, status="todo").exists()


def test_label_created_then_changed_deliver_the_event_with_its_details_after_commit(labelled_project, django_capture_on_commit_callbacks):
    everything = hook(labelled_project, ALL_EVENTS)
    changes_only = hook(labelled_project, ["label.changed"], url="https://other.example/hook")
    hook(labelled_project, ALL_EVENTS, url="https://off.example/hook", active=False)

    with django_capture_on_commit_callbacks(execute=True):
        first = labelled_project.label(0, 0, "aligned")
        assert not ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver").exists()  # not before commit
    with django_capture_on_commit_callbacks(execute=True):
        second = labelled_project.label(0, 0, "partial", expected_previous=first.pk)

    created, changed = WebhookDelivery.objects.filter(webhook=everything).order_by("pk")
    assert (created.event, changed.event) == ("label.created", "label.changed")
    assert created.payload["event"] == "label.created" and created.payload["id"] == str(created.delivery_id)
    assert created.payload["project"] == {"id": labelled_project.project.pk, "name": "Hooked"}
    assert created.payload["data"] == {
        "label_event_id": first.pk,
        "pair_id": labelled_project.pair.pk,
        "simple_sentence_id": labelled_project.simple[0].pk,
        "complex_sentence_id": labelled_project.complex_[0].pk,
        "old_label": "",
        "new_label": "aligned",
        "source": "human",
        "annotator": {"id": labelled_project.anna.pk, "username": "anna"},
        "created_at": first.created_at.isoformat(),
    }
    assert changed.payload["data"]["label_event_id"] == second.pk
    assert (changed.payload["data"]["old_label"], changed.payload["data"]["new_label"]) == ("aligned", "partial")
    assert [d.event for d in WebhookDelivery.objects.filter(webhook=changes_only)] == ["label.changed"]
    assert WebhookDelivery.objects.count() == 3  # nothing for the disabled webhook
    assert all(queued(delivery) for delivery in WebhookDelivery.objects.all())


def test_an_undo_is_a_label_change(labelled_project, django_capture_on_commit_callbacks):
    webhook = hook(labelled_project, ["label.changed"])
    labelled_project.label(1, 1, "not_aligned")
    with django_capture_on_commit_callbacks(execute=True):
        annotation_services.label_undo(project=labelled_project.project, annotator=labelled_project.anna, pair=labelled_project.pair)
    (delivery,) = WebhookDelivery.objects.filter(webhook=webhook)
    assert delivery.payload["data"]["source"] == "undo" and delivery.payload["data"]["old_label"] == "not_aligned"
    assert delivery.payload["data"]["new_label"] == ""


def test_a_rolled_back_label_sends_nothing(labelled_project, django_capture_on_commit_callbacks):
    hook(labelled_project, ALL_EVENTS)
    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        labelled_project.label(0, 0, "aligned")
        assert WebhookDelivery.objects.count() == 1  # created with the label, in its transaction
        raise RuntimeError("the request failed after the label was written")
    assert callbacks == []
    assert not LabelEvent.objects.exists() and not WebhookDelivery.objects.exists()
    assert not ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver").exists()


def test_a_label_reaches_a_real_receiver_signed_as_label_created(labelled_project, receiver_factory, django_capture_on_commit_callbacks):
    receiver = receiver_factory(200)
    webhook = hook(labelled_project, ["label.created"], url=receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        event = labelled_project.label(2, 1, "aligned")
    (delivery,) = WebhookDelivery.objects.filter(webhook=webhook)
    webhook_delivery_attempt(delivery_id=delivery.pk)
    (request,) = receiver.requests
    assert request.headers["X-Webhook-Event"] == "label.created"
    assert json.loads(request.body)["data"]["label_event_id"] == event.pk


def test_bulk_created_label_events_send_nothing(labelled_project):
    hook(labelled_project, ALL_EVENTS)
    LabelEvent.objects.bulk_create([
        LabelEvent(project=labelled_project.project, pair=labelled_project.pair, annotator=labelled_project.anna,
                   simple_sentence=labelled_project.simple[0], complex_sentence=labelled_project.complex_[0],
                   old_label="", new_label="aligned", source="import"),
    ])  # fmt: skip
    assert LabelEvent.objects.count() == 1 and not WebhookDelivery.objects.exists()


def test_a_cancelled_run_sends_run_finished_to_the_projects_on_its_corpus_only(
    labelled_project, tram_corpus, owner, django_capture_on_commit_callbacks
):
    webhook = hook(labelled_project, ["run.finished"])
    labels_only = hook(labelled_project, ["label.created"], url="https://labels.example/hook")
    other_corpus, _ = corpus_get_or_create(name="Elsewhere", language="en", owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        run = aligning.alignment_run_create(corpus=tram_corpus, created_by=owner)
    assert not WebhookDelivery.objects.exists()  # queued is not finished

    with django_capture_on_commit_callbacks(execute=True):
        cancelled = aligning.alignment_run_cancel(run=run)

    assert cancelled.status == "cancelled"
    (delivery,) = WebhookDelivery.objects.all()
    assert delivery.webhook == webhook and delivery.event == "run.finished" and queued(delivery)
    assert delivery.payload["data"] == {
        "run_id": run.pk, "corpus_id": tram_corpus.pk, "status": "cancelled", "pairs_done": 0, "pairs_total": 1,
        "error": "", "finished_at": cancelled.finished_at.isoformat(),
    }  # fmt: skip
    assert not WebhookDelivery.objects.filter(webhook=labels_only).exists()
    assert other_corpus.pk != tram_corpus.pk


def test_export_finished_sends_export_ready_with_the_files(labelled_project, django_capture_on_commit_callbacks):
    webhook = hook(labelled_project, ["export.ready"])
    hook(labelled_project, ["label.created"], url="https://labels.example/hook")
    stand_in = SimpleNamespace(pk=41, project_id=labelled_project.project.pk, files=["gold.tsv", "README.md"])

    with django_capture_on_commit_callbacks(execute=True):
        export_finished.send(sender=SimpleNamespace, job=stand_in)

    (delivery,) = WebhookDelivery.objects.all()
    assert delivery.webhook == webhook and delivery.event == "export.ready" and queued(delivery)
    expected = {"export_id": 41, "files": ["gold.tsv", "README.md"]}
    download = export_download_path(stand_in)
    if download:  # the export pages exist: their download path is included
        expected["download_url"] = download
        assert download.startswith("/annotate/")
    assert delivery.payload["data"] == expected
    assert delivery.payload["project"]["id"] == labelled_project.project.pk


def test_an_export_of_another_project_or_without_files_is_handled(labelled_project, tram_corpus, owner):
    hook(labelled_project, ["export.ready"])
    other = annotation_services.project_create(name="Other", corpus=tram_corpus, created_by=owner)
    export_finished.send(sender=SimpleNamespace, job=SimpleNamespace(pk=1, project_id=other.pk))
    assert not WebhookDelivery.objects.exists()
    export_finished.send(sender=SimpleNamespace, job=SimpleNamespace(pk=2, project_id=labelled_project.project.pk))
    (delivery,) = WebhookDelivery.objects.all()
    assert delivery.payload["data"]["files"] == [] and delivery.payload["data"]["export_id"] == 2
