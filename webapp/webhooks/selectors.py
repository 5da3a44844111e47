"""Reads for webhooks: who may manage a project's webhooks, which webhooks want an event, the delivery log."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet

from annotation import selectors as annotation_selectors
from annotation.models import AnnotationProject, ProjectMembership
from webapp.webhooks.models import Webhook, WebhookDelivery


def project_get_for_manager(user: AbstractBaseUser, project_id: int) -> AnnotationProject:
    """The project when the user manages it (staff do); 404 without a role, 403 with another role."""
    project, role = annotation_selectors.project_get_for_user(user, project_id)
    if role != ProjectMembership.Role.MANAGER:
        raise PermissionDenied("webhooks are managed by the project's managers")
    return project


def project_webhooks(project: AnnotationProject) -> QuerySet[Webhook]:
    """The project's webhooks with delivery counts per status, for the list."""
    return (
        Webhook.objects.filter(project=project)
        .select_related("created_by")
        .annotate(
            delivered=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.SUCCEEDED)),
            failed=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.FAILED)),
            pending=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.PENDING)),
        )
    )


def event_webhooks(event: str, *, project_ids: Iterable[int]) -> list[Webhook]:
    """Active webhooks of these projects that subscribed to ``event`` (with their projects)."""
    return list(Webhook.objects.filter(project_id__in=list(project_ids), active=True, events__contains=[event]).select_related("project"))


def webhook_deliveries(webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """The delivery log, newest first, each with its attempts."""
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-pk").prefetch_related("attempt_log")
