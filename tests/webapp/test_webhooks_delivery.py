"""Webhook delivery against a real HTTP receiver: signing, retries with backoff, giving up, redelivery, the task."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateJob

from webapp.webhooks import services
from webapp.webhooks.delivery import (
    backoff_seconds,
    delivery_enqueue,
    webhook_delivery_attempt,
    webhook_delivery_redeliver,
    webhook_delivery_step,
)
from webapp.webhooks.models import WebhookAttempt, WebhookDelivery
from webapp.webhooks.signing import signature_verify

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the HTTP receiver and the labelled project
pytestmark = pytest.mark.django_db


def hook(project, url: str, events=("label.created",)):
    return services.webhook_create(project=project.project, url=url, events=list(events), created_by=project.manager)


def attempt_until_done(delivery: WebhookDelivery, **options) -> list[float]:
    """Attempts as the task chain would make them, without the waits; the retry delays asked for."""
    delays = []
    while (outcome := webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=0, **options)).retry_in is not None:
        delays.append(outcome.retry_in)
        assert len(delays) < 20, "the delivery never ends"
    return delays


def test_delivery_is_signed_with_the_webhook_secret_and_the_receiver_verifies_it(labelled_project, receiver_factory):
    receiver = receiver_factory(200)
    webhook = hook(labelled_project, receiver.url)
    delivery = services.webhook_ping(webhook=webhook, by=labelled_project.manager)

    outcome = webhook_delivery_attempt(delivery_id=delivery.pk)

    (request,) = receiver.requests
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["X-Webhook-Event"] == "ping"
    assert request.headers["X-Webhook-Delivery"] == str(delivery.delivery_id)
    assert signature_verify(webhook.secret, request.headers["X-Webhook-Timestamp"], request.body, request.headers["X-Webhook-Signature"])
    assert not signature_verify(
        "another secret", request.headers["X-Webhook-Timestamp"], request.body, request.headers["X-Webhook-Signature"]
    )
    assert not signature_verify(
        webhook.secret, int(request.headers["X-Webhook-Timestamp"]) + 1, request.body, request.headers["X-Webhook-Signature"]
    )
    assert request.body == json.dumps(delivery.payload, sort_keys=True).encode()
    body = json.loads(request.body)
    assert body["event"] == "ping" and body["id"] == str(delivery.delivery_id)
    assert body["project"] == {"id": labelled_project.project.pk, "name": "Hooked"}
    assert body["data"]["webhook_id"] == webhook.pk and body["data"]["sent_by"] == "owner"
    delivery.refresh_from_db()
    assert outcome.retry_in is None
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("succeeded", 1, 200)
    assert delivery.delivered_at is not None and delivery.next_attempt_at is None


def test_the_page_snippet_verifies_a_real_delivery(labelled_project, receiver_factory):
    """The six lines shown to users on the webhooks page, run against what the receiver got."""
    import hashlib
    import hmac
    import time

    def verify(secret: str, body: bytes, timestamp: str, signature: str) -> bool:
        expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        fresh = abs(time.time() - int(timestamp)) < 300
        return fresh and hmac.compare_digest(expected, signature)

    receiver = receiver_factory(204)
    webhook = hook(labelled_project, receiver.url)
    webhook_delivery_attempt(delivery_id=services.webhook_ping(webhook=webhook, by=None).pk)
    (request,) = receiver.requests
    assert verify(webhook.secret, request.body, request.headers["X-Webhook-Timestamp"], request.headers["X-Webhook-Signature"])
    assert not verify(webhook.secret, request.body + b" ", request.headers["X-Webhook-Timestamp"], request.headers["X-Webhook-Signature"])


def test_a_500_then_a_200_gives_two_attempts_and_success_and_nothing_is_sent_again(labelled_project, receiver_factory):
    receiver = receiver_factory(500, 200)
    delivery = services.webhook_ping(webhook=hook(labelled_project, receiver.url), by=None)

    first = webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=30)
    assert first.retry_in == 30.0
    assert first.delivery.status == "pending" and first.delivery.last_status_code == 500
    assert first.delivery.last_error == "HTTP 500 Internal Server Error"
    assert timedelta(seconds=25) < first.delivery.next_attempt_at - timezone.now() <= timedelta(seconds=30)

    second = webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=30)
    assert second.retry_in is None and second.delivery.status == "succeeded" and second.delivery.attempts == 2
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery).values_list("number", "status_code", "error"))
    assert attempts == [(1, 500, "HTTP 500 Internal Server Error"), (2, 200, "")]
    # The same body and delivery id on both tries: receivers can drop duplicates by it.
    assert receiver.requests[0].body == receiver.requests[1].body
    assert receiver.requests[0].headers["X-Webhook-Delivery"] == receiver.requests[1].headers["X-Webhook-Delivery"]

    again = webhook_delivery_attempt(delivery_id=delivery.pk)  # a duplicate job, e.g. a requeued stalled one
    assert again.retry_in is None and len(receiver.requests) == 2 and again.delivery.attempts == 2


@override_settings(WEBHOOK_MAX_ATTEMPTS=3)
def test_a_receiver_that_is_down_fails_after_the_last_attempt_with_every_error_logged(labelled_project, closed_port_url):
    delivery = services.webhook_ping(webhook=hook(labelled_project, closed_port_url), by=None)

    delays = attempt_until_done(delivery)

    delivery.refresh_from_db()
    assert delays == [0.0, 0.0]
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 3, None)
    assert "Connection refused" in delivery.last_error and delivery.next_attempt_at is None and delivery.delivered_at is None
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery))
    assert [a.number for a in attempts] == [1, 2, 3]
    assert all(a.status_code is None and "ConnectionRefusedError" in a.error and "Connection refused" in a.error for a in attempts)


def test_backoff_doubles_from_the_base_and_stops_at_the_cap():
    assert [backoff_seconds(n, base=60, cap=3600) for n in range(1, 9)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert [backoff_seconds(n) for n in range(1, 6)] == [60, 120, 240, 480, 960]  # the defaults: 1, 2, 4, 8, 16 minutes
    with override_settings(WEBHOOK_BACKOFF_BASE_SECONDS=5, WEBHOOK_BACKOFF_MAX_SECONDS=15):
        assert [backoff_seconds(n) for n in range(1, 5)] == [5, 10, 15, 15]
    with pytest.raises(ValueError, match="start at 1"):
        backoff_seconds(0)


def test_a_slow_receiver_times_out_and_a_redirect_is_not_followed(labelled_project, receiver_factory):
    slow = receiver_factory(200, delay=1.0)
    delivery = services.webhook_ping(webhook=hook(labelled_project, slow.url), by=None)
    outcome = webhook_delivery_attempt(delivery_id=delivery.pk, timeout=0.2)
    assert outcome.delivery.status == "pending" and outcome.retry_in is not None
    assert "timed out" in outcome.delivery.last_error and outcome.delivery.last_status_code is None

    moved = receiver_factory(302)
    delivery = services.webhook_ping(webhook=hook(labelled_project, moved.url), by=None)
    outcome = webhook_delivery_attempt(delivery_id=delivery.pk)
    assert outcome.delivery.status == "pending" and outcome.delivery.last_status_code == 302
    assert outcome.delivery.last_error == "redirect to http://127.0.0.1:9/elsewhere not followed"
    assert len(moved.requests) == 1


def test_a_disabled_webhook_sends_nothing_and_its_pending_delivery_fails(labelled_project, receiver_factory):
    receiver = receiver_factory(200)
    webhook = hook(labelled_project, receiver.url)
    delivery = services.webhook_ping(webhook=webhook, by=None)
    services.webhook_set_active(webhook=webhook, active=False)

    outcome = webhook_delivery_attempt(delivery_id=delivery.pk)

    assert receiver.requests == []
    assert outcome.delivery.status == "failed" and outcome.delivery.attempts == 0
    assert outcome.delivery.last_error == "the webhook was disabled before this delivery was sent"
    with pytest.raises(ValueError, match="disabled: enable it"):
        services.webhook_ping(webhook=webhook, by=None)
    with pytest.raises(ValueError, match="disabled: enable it before redelivering"):
        webhook_delivery_redeliver(delivery=delivery)


@override_settings(WEBHOOK_MAX_ATTEMPTS=2)
def test_redeliver_gives_a_failed_delivery_new_attempts_and_refuses_succeeded_or_pending_ones(
    labelled_project, receiver_factory, django_capture_on_commit_callbacks
):
    receiver = receiver_factory(500, 500, 200)
    delivery = services.webhook_ping(webhook=hook(labelled_project, receiver.url), by=None)
    attempt_until_done(delivery)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 2

    with django_capture_on_commit_callbacks(execute=True):
        redelivered = webhook_delivery_redeliver(delivery=delivery)
    assert redelivered.status == "pending" and redelivered.attempt_limit == 4
    assert (
        ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver", args={"delivery_id": delivery.pk}, status="todo").count() == 1
    )
    with pytest.raises(ValueError, match="still being delivered"):
        webhook_delivery_redeliver(delivery=delivery)

    attempt_until_done(delivery)
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 3 and len(receiver.requests) == 3
    with pytest.raises(ValueError, match="succeeded already; it is not sent again"):
        webhook_delivery_redeliver(delivery=delivery)


def test_the_task_makes_an_attempt_and_queues_the_next_one_after_its_backoff(labelled_project, receiver_factory):
    receiver = receiver_factory(503)
    delivery = services.webhook_ping(webhook=hook(labelled_project, receiver.url), by=None)

    webhook_delivery_step(delivery_id=delivery.pk)  # the task's body (the task adds only connection hygiene)

    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.status == "pending" and len(receiver.requests) == 1
    (job,) = ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver", args={"delivery_id": delivery.pk})
    assert job.queue_name == "webhooks" and job.status == "todo"
    assert job.lock == job.queueing_lock == f"webhook-delivery-{delivery.pk}"
    assert abs((job.scheduled_at - delivery.next_attempt_at).total_seconds()) < 5
    assert timedelta(seconds=55) < job.scheduled_at - timezone.now() <= timedelta(seconds=60)
    delivery_enqueue(delivery.pk)  # a job is already waiting for this delivery: no second one
    assert ProcrastinateJob.objects.filter(args={"delivery_id": delivery.pk}).count() == 1


@override_settings(WEBHOOK_BACKOFF_BASE_SECONDS=0)
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_retries_until_the_receiver_accepts(labelled_project, receiver_factory):
    with connection.cursor() as cursor:  # procrastinate's tables are not flushed between transactional tests
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")
    receiver = receiver_factory(500, 200)
    delivery = services.webhook_ping(webhook=hook(labelled_project, receiver.url), by=None)  # queued on commit

    def work() -> None:  # in its own thread: a browser test earlier in the session may leave an event loop in this one
        with app.replace_connector(app.connector.get_worker_connector()):
            app.run_worker(queues=["webhooks"], wait=False, install_signal_handlers=False, listen_notify=False)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the worker did not finish within 120 s"

    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 2 and len(receiver.requests) == 2
    assert list(ProcrastinateJob.objects.filter(args={"delivery_id": delivery.pk}).values_list("status", flat=True)) == [
        "succeeded",
        "succeeded",
    ]
