"""Writes for webhooks: create, enable/disable, delete, send a test event, and fan an event out to deliveries."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.models import AnnotationProject
from webapp.webhooks.delivery import deliveries_enqueue_on_commit, max_attempts
from webapp.webhooks.models import EVENTS, PING, Webhook, WebhookDelivery


def webhook_create(*, project: AnnotationProject, url: str, events: list[str], created_by: AbstractBaseUser | None) -> Webhook:
    """A new active webhook with a fresh secret; django ValidationError naming the field on a bad URL or events."""
    if isinstance(events, list) and all(name in EVENTS for name in events):
        events = [name for name in EVENTS if name in events]  # one spelling and order, whatever the form sent
    webhook = Webhook(project=project, url=url.strip(), events=events, created_by=created_by)
    webhook.full_clean()
    webhook.save()
    return webhook


def webhook_set_active(*, webhook: Webhook, active: bool) -> Webhook:
    """Disabling stops new deliveries and the retries of pending ones (they end as failed, redeliverable later)."""
    Webhook.objects.filter(pk=webhook.pk).update(active=active)
    webhook.active = active
    return webhook


def webhook_delete(*, webhook: Webhook) -> None:
    """Removes the webhook with its delivery log; queued attempts then find nothing to send."""
    webhook.delete()


def webhook_ping(*, webhook: Webhook, by: AbstractBaseUser | None) -> WebhookDelivery:
    """Queue a ``ping`` delivery to one webhook so its owner can check the receiver and its signature check."""
    if not webhook.active:
        raise ValueError(f"webhook {webhook.pk} is disabled: enable it to send a test event")
    data = {"webhook_id": webhook.pk, "url": webhook.url, "events": webhook.events, "sent_by": getattr(by, "username", None)}
    with transaction.atomic():
        (delivery,) = deliveries_create(webhooks=[webhook], event=PING, project=webhook.project, data=data)
    return delivery


def deliveries_create(*, webhooks: Iterable[Webhook], event: str, project: AnnotationProject, data: dict) -> list[WebhookDelivery]:
    """One pending delivery per webhook with its frozen payload; attempts are queued when the caller's
    transaction commits, so a rolled-back change announces nothing."""
    now = timezone.now().isoformat()
    deliveries = []
    for webhook in webhooks:
        delivery_id = uuid.uuid4()
        payload = {
            "id": str(delivery_id),
            "event": event,
            "created_at": now,
            "project": {"id": project.pk, "name": project.name},
            "data": data,
        }
        deliveries.append(
            WebhookDelivery(webhook=webhook, event=event, payload=payload, delivery_id=delivery_id, attempt_limit=max_attempts())
        )
    if not deliveries:
        return []
    created = WebhookDelivery.objects.bulk_create(deliveries)
    deliveries_enqueue_on_commit([delivery.pk for delivery in created])
    return created
