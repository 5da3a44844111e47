"""A project's webhooks page: create, enable/disable, delete, send a test event, and the delivery log
with redelivery. Managers only (staff too); 404 without a role, 403 with another. Thin: services decide."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.webhooks import selectors, services
from webapp.webhooks.delivery import webhook_delivery_redeliver
from webapp.webhooks.forms import WebhookForm
from webapp.webhooks.models import Webhook, WebhookDelivery

LOG_PAGE_SIZE = 10


def _log(webhook: Webhook, page: object = 1) -> dict:
    """What the delivery-log section shows: the webhook and one page of its deliveries."""
    deliveries = Paginator(selectors.webhook_deliveries(webhook), LOG_PAGE_SIZE).get_page(page)
    pending = any(delivery.status == WebhookDelivery.Status.PENDING for delivery in deliveries)
    return {"webhook": webhook, "page": deliveries, "pending": pending}


def _page(request: HttpRequest, project, form: WebhookForm) -> HttpResponse:
    hooks = [_log(webhook) for webhook in selectors.project_webhooks(project)]
    return render(request, "webhooks/project_webhooks.html", {"project": project, "form": form, "hooks": hooks})


def project_webhooks(request: HttpRequest, project_id: int) -> HttpResponse:
    project = selectors.project_get_for_manager(request.user, project_id)
    return _page(request, project, WebhookForm())


@require_POST
def webhook_create(request: HttpRequest, project_id: int) -> HttpResponse:
    project = selectors.project_get_for_manager(request.user, project_id)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            webhook = services.webhook_create(project=project, created_by=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, f"Webhook {webhook.pk} created; send it a test event to check the receiver.")
            return redirect("webhooks:project_webhooks", project_id=project.pk)
    return _page(request, project, form)


def _webhook(request: HttpRequest, project_id: int, webhook_id: int) -> Webhook:
    project = selectors.project_get_for_manager(request.user, project_id)
    return get_object_or_404(Webhook.objects.select_related("project"), pk=webhook_id, project=project)


@require_POST
def webhook_toggle(request: HttpRequest, project_id: int, webhook_id: int) -> HttpResponse:
    webhook = _webhook(request, project_id, webhook_id)
    services.webhook_set_active(webhook=webhook, active=not webhook.active)
    messages.success(request, f"Webhook {webhook.pk} {'enabled' if webhook.active else 'disabled'}.")
    return redirect("webhooks:project_webhooks", project_id=project_id)


@require_POST
def webhook_delete(request: HttpRequest, project_id: int, webhook_id: int) -> HttpResponse:
    webhook = _webhook(request, project_id, webhook_id)
    services.webhook_delete(webhook=webhook)
    messages.success(request, f"Webhook {webhook_id} and its delivery log deleted.")
    return redirect("webhooks:project_webhooks", project_id=project_id)


@require_POST
def webhook_ping(request: HttpRequest, project_id: int, webhook_id: int) -> HttpResponse:
    webhook = _webhook(request, project_id, webhook_id)
    try:
        delivery = services.webhook_ping(webhook=webhook, by=request.user)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Test event queued (delivery {delivery.delivery_id}).")
    return redirect("webhooks:project_webhooks", project_id=project_id)


def _log_response(request: HttpRequest, webhook: Webhook, page: object = 1, notice: str = "") -> HttpResponse:
    context = {"project": webhook.project, "hook": _log(webhook, page), "notice": notice}
    if request.htmx:
        return render(request, "webhooks/project_webhooks.html#delivery_log", context)
    return render(request, "webhooks/webhook_log.html", context)


def webhook_log(request: HttpRequest, project_id: int, webhook_id: int) -> HttpResponse:
    """One webhook's delivery log: the page's section for htmx (paging, polling), a whole page otherwise."""
    webhook = _webhook(request, project_id, webhook_id)
    return _log_response(request, webhook, request.GET.get("page", 1))


@require_POST
def delivery_redeliver(request: HttpRequest, project_id: int, webhook_id: int, delivery_id: int) -> HttpResponse:
    webhook = _webhook(request, project_id, webhook_id)
    delivery = get_object_or_404(WebhookDelivery, pk=delivery_id, webhook=webhook)
    try:
        webhook_delivery_redeliver(delivery=delivery)
    except ValueError as error:
        notice = str(error)
        status = 409
    else:
        notice = f"Delivery {delivery.delivery_id} queued again."
        status = 200
    if request.htmx:
        page = request.POST.get("page") or request.GET.get("page", 1)  # the job card's button carries it in its URL
        response = _log_response(request, webhook, page, notice)
        response.status_code = status
        return response
    (messages.error if status == 409 else messages.success)(request, notice)
    return redirect("webhooks:webhook_log", project_id=project_id, webhook_id=webhook.pk)
