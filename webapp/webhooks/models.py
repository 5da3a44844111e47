"""Webhooks of an annotation project, and the log of every delivery and every attempt to make it.

A delivery is one event for one webhook: its payload is frozen when the event happens,
so every retry (and a manual redelivery) sends the same body under the same delivery id,
and receivers can drop duplicates by that id. Attempts are separate rows because the
log should show each try (status code, error, time), not only the last one.
"""

from __future__ import annotations

import json
import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models

from alignment.jobs.models import Job, JobStatus

EVENTS: dict[str, str] = {
    "label.created": "a label is given to a sentence pair",
    "label.changed": "a label is changed or undone",
    "run.finished": "an alignment run on the project's corpus finishes (succeeded, failed or cancelled)",
    "export.ready": "a gold-dataset export's files are ready",
}
PING = "ping"  # the "send test event" button's event; every webhook receives it when asked

http_url_validator = URLValidator(
    schemes=["http", "https"], message="Enter an http:// or https:// URL.", code="url_scheme"
)  # its own code: fields replace "invalid" with their generic message


def events_validator(value: object) -> None:
    """A non-empty list of known event names (the form checks the same; this guards every other caller)."""
    if not isinstance(value, list) or not value:
        raise ValidationError("Choose at least one event.")
    unknown = [name for name in value if name not in EVENTS]
    if unknown:
        raise ValidationError(f"Unknown event(s) {', '.join(map(repr, unknown))}; events: {', '.join(EVENTS)}.")


def public_destination_validator(value: str) -> None:
    """Refuse URLs whose host is (or resolves to) a loopback, private, link-local or otherwise non-public address.

    Checked again before every send (DNS can change); a name that does not resolve yet is accepted here.
    """
    from webapp.webhooks.outbound import BlockedDestination, destination_check

    try:
        destination_check(value, unresolvable_ok=True)
    except BlockedDestination as error:
        raise ValidationError(f"Refused: {error}", code="blocked_destination") from None


def new_secret() -> str:
    return secrets.token_urlsafe(32)


class Webhook(models.Model):
    """A URL that receives a project's events, signed with its own secret (HMAC-SHA256)."""

    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000, validators=[http_url_validator, public_destination_validator])
    events = models.JSONField(
        default=list, validators=[events_validator], error_messages={"blank": "Choose at least one event."},
        help_text="Event names this URL receives.",
    )  # fmt: skip
    secret = models.CharField(max_length=100, default=new_secret, help_text="Receivers verify X-Webhook-Signature with it.")
    active = models.BooleanField(default=True, help_text="A disabled webhook receives nothing, not even retries.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"webhook {self.pk} → {self.url}"


class WebhookDelivery(Job):
    """One event sent (or being sent) to one webhook; retried with exponential backoff until ``attempt_limit``.

    A delivery waits as "pending" between attempts (it never shows "running": the send takes
    seconds). A worker killed mid-send loses that attempt's record only; the requeued task makes
    the next attempt under the same delivery id, so receivers that drop duplicates see it once.
    ``last_error`` is the last attempt's answer, ``error`` why the delivery as a whole failed.
    """

    kind = "webhook delivery"
    resumable = True
    retries_itself = True  # attempts are sends, retried with backoff: the job card shows no worker restart
    queue_priority = 20  # one short POST: never behind an hour of mining (and no user's lane: webhooks are the project's)

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    payload = models.JSONField(help_text="The body sent, as JSON with sorted keys; frozen when the event happened.")
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    attempt_limit = models.PositiveIntegerField(
        help_text="Give up after this many attempts in all; a redelivery raises it by WEBHOOK_MAX_ATTEMPTS."
    )
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["webhook", "-id"])]

    def __str__(self) -> str:
        return f"{self.event} {self.delivery_id} ({self.status})"

    @property
    def payload_pretty(self) -> str:
        return json.dumps(self.payload, indent=2, sort_keys=True)


class WebhookAttempt(models.Model):
    """One HTTP POST of a delivery: what came back, or why nothing did."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_unique_number")]

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
