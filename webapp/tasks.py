"""Background tasks of the webapp app. Thin: they take ids and call a service."""

from __future__ import annotations

from alignment.jobs.wrapper import job_task
from webapp.webhooks.delivery import webhook_delivery_step


@job_task(queue="webhooks", name="webapp.webhook_deliver")
def webhook_deliver(*, delivery_id: int) -> None:
    """One attempt of a webhook delivery; a failure re-queues the next attempt after its backoff."""
    webhook_delivery_step(delivery_id=delivery_id)
