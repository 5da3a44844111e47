"""Sending deliveries: one signed POST per attempt, exponential backoff between attempts, and redelivery.

An attempt claims its number in a short transaction, sends with no transaction open (a
slow receiver must not hold a row lock or a connection in a transaction for up to the
timeout), then records the outcome in a second short one. Two attempts of the same
delivery never run at once because every job of a delivery carries the same
Procrastinate ``lock``; a delivery that already succeeded is never sent again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from alignment.jobs.enqueue import defer_unless_waiting
from webapp.webhooks import outbound
from webapp.webhooks.models import WebhookAttempt, WebhookDelivery
from webapp.webhooks.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    body_encode,
    signature,
)

USER_AGENT = "SentenceAligner-Webhooks/1"
DELIVER_TASK = "webapp.webhook_deliver"


def max_attempts() -> int:
    return settings.WEBHOOK_MAX_ATTEMPTS


def backoff_seconds(attempt: int, *, base: float | None = None, cap: float | None = None) -> float:
    """Wait after failed attempt number ``attempt`` (1-based): base, 2·base, 4·base, … capped.

    With the defaults (60 s, cap 1 h) and 6 attempts: 1, 2, 4, 8, 16 minutes, about half
    an hour from the first try to giving up, long enough to ride out a receiver's deploy.
    """
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")
    base = getattr(settings, "WEBHOOK_BACKOFF_BASE_SECONDS", 60) if base is None else base
    cap = getattr(settings, "WEBHOOK_BACKOFF_MAX_SECONDS", 3600) if cap is None else cap
    return float(min(cap, base * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class SendResult:
    """What an attempt learnt: the status code and why it failed, never the receiver's body (not ours to keep)."""

    status_code: int | None
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


@dataclass(frozen=True)
class AttemptOutcome:
    delivery: WebhookDelivery | None  # None: it was deleted (with its webhook)
    retry_in: float | None  # seconds until the next attempt is due; None: nothing more to do


def http_post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> SendResult:
    """POST ``body`` to a public address (webapp.webhooks.outbound checks it); never raises, it reports."""
    result = outbound.post(url, body, headers, timeout)
    return SendResult(result.status_code, result.error)


def delivery_headers(delivery: WebhookDelivery, secret: str, body: bytes, timestamp: int) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        TIMESTAMP_HEADER: str(timestamp),
        EVENT_HEADER: delivery.event,
        DELIVERY_HEADER: str(delivery.delivery_id),
    }


def _delivery_claim(delivery_id: int) -> tuple[WebhookDelivery | None, bool]:
    """Lock the delivery and count the attempt about to be made; (delivery, whether to send)."""
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().select_related("webhook").filter(pk=delivery_id).first()
        if delivery is None:  # its webhook was deleted after the attempt was queued
            return None, False
        if delivery.status != WebhookDelivery.Status.PENDING:
            return delivery, False
        if not delivery.webhook.active:
            delivery.status = WebhookDelivery.Status.FAILED
            delivery.last_error = "the webhook was disabled before this delivery was sent"
            delivery.next_attempt_at = None
            delivery.error, delivery.finished_at = delivery.last_error, timezone.now()
            delivery.save(update_fields=["status", "last_error", "next_attempt_at", "error", "finished_at"])
            return delivery, False
        if delivery.attempts >= delivery.attempt_limit:  # the worker making the last attempt died before recording it
            delivery.mark_failed(f"the worker sending attempt {delivery.attempts} of {delivery.attempt_limit} stopped")
            return delivery, False
        delivery.attempts += 1
        delivery.heartbeat_at = timezone.now()
        delivery.started_at = delivery.started_at or delivery.heartbeat_at
        delivery.save(update_fields=["attempts", "heartbeat_at", "started_at"])
    return delivery, True


def _delivery_record(
    delivery_id: int, number: int, started_at, duration_ms: int, result, backoff_base: float | None, backoff_cap: float | None
) -> AttemptOutcome:
    """Store attempt ``number``'s outcome and decide: delivered, given up, or retried after a backoff."""
    retry_in = None
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None:
            return AttemptOutcome(None, None)
        WebhookAttempt.objects.create(
            delivery=delivery, number=number, started_at=started_at, duration_ms=duration_ms,
            status_code=result.status_code, error=result.error,
        )  # fmt: skip
        delivery.last_status_code = result.status_code
        delivery.last_error = result.error
        if result.succeeded:
            delivery.status = WebhookDelivery.Status.SUCCEEDED
            delivery.delivered_at = delivery.finished_at = timezone.now()
            delivery.next_attempt_at = None
        elif number >= delivery.attempt_limit:
            delivery.status = WebhookDelivery.Status.FAILED
            delivery.error, delivery.finished_at = f"gave up after {number} attempts: {result.error}", timezone.now()
            delivery.next_attempt_at = None
        else:
            retry_in = backoff_seconds(number, base=backoff_base, cap=backoff_cap)
            delivery.next_attempt_at = timezone.now() + timedelta(seconds=retry_in)
        delivery.save()
    return AttemptOutcome(delivery, retry_in)


def webhook_delivery_attempt(
    *, delivery_id: int, timeout: float | None = None, backoff_base: float | None = None, backoff_cap: float | None = None
) -> AttemptOutcome:
    """Make the next attempt of a pending delivery and record it; says when to retry, if at all.

    Succeeded and failed deliveries are left alone (idempotent), deleted ones are skipped. A delivery whose webhook
    was disabled meanwhile is marked failed without sending. No lock is held while the request is in flight.
    """
    delivery, send = _delivery_claim(delivery_id)
    if not send:
        return AttemptOutcome(delivery, None)
    body = body_encode(delivery.payload)
    started_at = timezone.now()
    clock = time.perf_counter()
    headers = delivery_headers(delivery, delivery.webhook.secret, body, int(time.time()))
    result = http_post(delivery.webhook.url, body, headers, settings.WEBHOOK_TIMEOUT_SECONDS if timeout is None else timeout)
    duration_ms = round((time.perf_counter() - clock) * 1000)
    return _delivery_record(delivery_id, delivery.attempts, started_at, duration_ms, result, backoff_base, backoff_cap)


def webhook_delivery_step(*, delivery_id: int) -> AttemptOutcome:
    """What the task does: one attempt, then the next one queued after its backoff when it failed."""
    outcome = webhook_delivery_attempt(delivery_id=delivery_id)
    if outcome.retry_in is not None:
        delivery_enqueue(delivery_id, delay=outcome.retry_in)
    return outcome


def delivery_enqueue(delivery_id: int, *, delay: float = 0) -> None:
    """Queue an attempt ``delay`` seconds from now; a job already waiting for the delivery is enough."""
    options = {"schedule_in": {"seconds": delay}} if delay > 0 else None
    defer_unless_waiting(
        DELIVER_TASK, f"webhook-delivery-{delivery_id}", WebhookDelivery(pk=delivery_id), options=options, delivery_id=delivery_id
    )


def deliveries_enqueue_on_commit(delivery_ids: list[int]) -> None:
    """Queue first attempts once the transaction that created the deliveries commits (none if it rolls back)."""
    if delivery_ids:
        transaction.on_commit(partial(_enqueue_all, list(delivery_ids)))


def _enqueue_all(delivery_ids: list[int]) -> None:
    for pk in delivery_ids:
        delivery_enqueue(pk)


def webhook_delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a failed delivery again, with WEBHOOK_MAX_ATTEMPTS more attempts; ValueError saying why not."""
    with transaction.atomic():
        locked = WebhookDelivery.objects.select_for_update().select_related("webhook").get(pk=delivery.pk)
        if locked.status == WebhookDelivery.Status.SUCCEEDED:
            raise ValueError(f"delivery {locked.delivery_id} succeeded already; it is not sent again")
        if locked.status == WebhookDelivery.Status.PENDING:
            raise ValueError(f"delivery {locked.delivery_id} is still being delivered (attempt {locked.attempts} so far)")
        if not locked.webhook.active:
            raise ValueError(f"webhook {locked.webhook_id} is disabled: enable it before redelivering")
        locked.status = WebhookDelivery.Status.PENDING
        locked.attempt_limit = locked.attempts + max_attempts()
        locked.next_attempt_at = timezone.now()
        locked.error, locked.finished_at = "", None
        locked.save(update_fields=["status", "attempt_limit", "next_attempt_at", "error", "finished_at"])
        deliveries_enqueue_on_commit([locked.pk])
    return locked
