"""Background tasks of the webapp app. Thin: they take ids and call a service."""

from __future__ import annotations

from django.db import close_old_connections
from procrastinate.contrib.django import app

from webapp.webhooks.delivery import webhook_delivery_step


@app.task(queue="webhooks", name="webapp.webhook_deliver")
def webhook_deliver(*, delivery_id: int) -> None:
    """One attempt of a webhook delivery; a failure re-queues the next attempt after its backoff."""
    close_old_connections()
    try:
        webhook_delivery_step(delivery_id=delivery_id)
    finally:
        close_old_connections()
