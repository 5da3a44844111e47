"""The webhooks page: who may use it, creating (and refusing bad input), enable/disable/delete, test events,
the paginated delivery log, redelivery."""

from __future__ import annotations

import re

import pytest
from django.test import override_settings
from django.urls import reverse
from procrastinate.contrib.django.models import ProcrastinateJob

from annotation import services as annotation_services
from webapp.webhooks import services
from webapp.webhooks.delivery import webhook_delivery_attempt
from webapp.webhooks.models import Webhook, WebhookDelivery

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the HTTP receiver and the labelled project
pytestmark = pytest.mark.django_db


@pytest.fixture
def webhook(labelled_project):
    return services.webhook_create(
        project=labelled_project.project, url="https://receiver.example/hook", events=["label.created"], created_by=labelled_project.manager
    )


def page_url(project) -> str:
    return reverse("webhooks:project_webhooks", args=[project.project.pk])


def test_managers_and_staff_see_the_page_with_the_secret(client, labelled_project, staff, webhook):
    for user in (labelled_project.manager, staff):
        client.force_login(user)
        response = client.get(page_url(labelled_project))
        html = response.content.decode()
        assert response.status_code == 200
        assert "https://receiver.example/hook" in html and webhook.secret in html and 'name="events"' in html


def test_annotators_and_viewers_are_refused_and_outsiders_see_no_project(client, labelled_project, outsider, webhook):
    urls = [
        ("get", page_url(labelled_project)),
        ("post", reverse("webhooks:webhook_create", args=[labelled_project.project.pk])),
        ("post", reverse("webhooks:webhook_toggle", args=[labelled_project.project.pk, webhook.pk])),
        ("post", reverse("webhooks:webhook_delete", args=[labelled_project.project.pk, webhook.pk])),
        ("post", reverse("webhooks:webhook_ping", args=[labelled_project.project.pk, webhook.pk])),
        ("get", reverse("webhooks:webhook_log", args=[labelled_project.project.pk, webhook.pk])),
    ]
    for user, status in ((labelled_project.anna, 403), (labelled_project.vic, 403), (outsider, 404)):
        client.force_login(user)
        for method, url in urls:
            response = getattr(client, method)(url, {"url": "https://evil.example/", "events": ["label.created"]})
            assert response.status_code == status, (user, url)
    client.logout()
    assert client.get(page_url(labelled_project)).status_code == 302  # to the login page
    webhook.refresh_from_db()
    assert Webhook.objects.count() == 1 and webhook.active and not WebhookDelivery.objects.exists()


def test_the_project_page_links_to_webhooks_for_managers_only(client, labelled_project):
    detail = reverse("annotation:project_detail", args=[labelled_project.project.pk])
    client.force_login(labelled_project.manager)
    assert page_url(labelled_project) in client.get(detail).content.decode()
    client.force_login(labelled_project.vic)
    assert page_url(labelled_project) not in client.get(detail).content.decode()


def test_a_manager_creates_a_webhook(client, labelled_project):
    client.force_login(labelled_project.manager)
    response = client.post(
        reverse("webhooks:webhook_create", args=[labelled_project.project.pk]),
        {"url": "https://receiver.example/new", "events": ["run.finished", "label.created"]},
    )
    assert response.status_code == 302 and response.url == page_url(labelled_project)
    webhook = Webhook.objects.get()
    assert webhook.url == "https://receiver.example/new" and webhook.events == ["label.created", "run.finished"]
    assert webhook.active and webhook.created_by == labelled_project.manager and len(webhook.secret) >= 40


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"url": "ftp://receiver.example/hook", "events": ["label.created"]}, "url", "Enter an http:// or https:// URL."),
        ({"url": "not a url", "events": ["label.created"]}, "url", "Enter a valid URL."),
        ({"url": "https://receiver.example/hook"}, "events", "Choose at least one event."),
        (
            {"url": "https://receiver.example/hook", "events": ["label.deleted"]},
            "events",
            "label.deleted is not one of the available choices",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(client, labelled_project, data, field, message):
    client.force_login(labelled_project.manager)
    response = client.post(reverse("webhooks:webhook_create", args=[labelled_project.project.pk]), data)
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == [field] and message in " ".join(errors[field])
    assert f'id="{field}-errors"' in response.content.decode()
    assert not Webhook.objects.exists()


def test_the_service_refuses_what_the_form_would(labelled_project):
    from django.core.exceptions import ValidationError

    for url, events, field, message in [
        ("ftp://receiver.example/hook", ["label.created"], "url", "Enter an http:// or https:// URL."),
        ("https://receiver.example/hook", [], "events", "Choose at least one event."),
        ("https://receiver.example/hook", ["label.created", "everything"], "events", "Unknown event(s) 'everything'"),
    ]:
        with pytest.raises(ValidationError) as error:
            services.webhook_create(project=labelled_project.project, url=url, events=events, created_by=None)
        assert list(error.value.message_dict) == [field] and message in error.value.message_dict[field][0]
    assert not Webhook.objects.exists()


def test_enable_disable_ping_and_delete(client, labelled_project, webhook, django_capture_on_commit_callbacks):
    client.force_login(labelled_project.manager)
    project_id = labelled_project.project.pk
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("webhooks:webhook_ping", args=[project_id, webhook.pk]))
    assert response.status_code == 302
    (ping,) = WebhookDelivery.objects.filter(webhook=webhook)
    assert ping.event == "ping" and ping.status == "pending"
    assert ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver", args={"delivery_id": ping.pk}).exists()

    client.post(reverse("webhooks:webhook_toggle", args=[project_id, webhook.pk]))
    webhook.refresh_from_db()
    assert not webhook.active
    response = client.post(reverse("webhooks:webhook_ping", args=[project_id, webhook.pk]), follow=True)
    assert "is disabled: enable it to send a test event" in response.content.decode()
    assert WebhookDelivery.objects.count() == 1
    client.post(reverse("webhooks:webhook_toggle", args=[project_id, webhook.pk]))
    webhook.refresh_from_db()
    assert webhook.active

    other = annotation_services.project_create(name="Other", corpus=labelled_project.project.corpus, created_by=labelled_project.manager)
    assert client.post(reverse("webhooks:webhook_delete", args=[other.pk, webhook.pk])).status_code == 404  # not that project's
    client.post(reverse("webhooks:webhook_delete", args=[project_id, webhook.pk]))
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()


def test_the_delivery_log_is_newest_first_and_paginated(client, labelled_project, webhook):
    deliveries = [services.webhook_ping(webhook=webhook, by=None) for _ in range(12)]
    client.force_login(labelled_project.manager)
    log_url = reverse("webhooks:webhook_log", args=[labelled_project.project.pk, webhook.pk])

    first = client.get(log_url)
    shown = [int(pk) for pk in re.findall(r'id="delivery-(\d+)"', first.content.decode())]
    assert shown == [d.pk for d in reversed(deliveries)][:10]
    assert "<html" in first.content.decode() and "page 1 of 2" in first.content.decode()
    second = client.get(log_url, {"page": 2}, headers={"HX-Request": "true"})
    html = second.content.decode()
    assert [int(pk) for pk in re.findall(r'id="delivery-(\d+)"', html)] == [deliveries[1].pk, deliveries[0].pk]
    assert "<html" not in html and f'id="log-{webhook.pk}"' in html and 'hx-trigger="every 2s"' in html  # pending: polls
    assert str(deliveries[0].delivery_id) in html and "&quot;event&quot;: &quot;ping&quot;" in html  # the payload, expandable


def test_redeliver_from_the_log(client, labelled_project, webhook, django_capture_on_commit_callbacks):
    delivery = services.webhook_ping(webhook=webhook, by=None)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=6)
    client.force_login(labelled_project.manager)
    url = reverse("webhooks:delivery_redeliver", args=[labelled_project.project.pk, webhook.pk, delivery.pk])

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "queued again" in response.content.decode()
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempt_limit == 12
    assert ProcrastinateJob.objects.filter(task_name="webapp.webhook_deliver", args={"delivery_id": delivery.pk}).exists()

    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="succeeded")
    response = client.post(url, headers={"HX-Request": "true"})
    assert response.status_code == 409 and "succeeded already; it is not sent again" in response.content.decode()
    response = client.post(url, follow=True)
    assert "succeeded already" in response.content.decode()
    client.force_login(labelled_project.anna)
    assert client.post(url).status_code == 403


@override_settings(WEBHOOK_MAX_ATTEMPTS=2)
def test_the_log_shows_every_attempt_and_stops_polling_when_nothing_is_pending(client, labelled_project, closed_port_url):
    webhook = services.webhook_create(project=labelled_project.project, url=closed_port_url, events=["run.finished"], created_by=None)
    delivery = services.webhook_ping(webhook=webhook, by=None)
    while webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=0).retry_in is not None:
        pass
    client.force_login(labelled_project.manager)

    html = client.get(page_url(labelled_project)).content.decode()

    row = html[html.index(f'id="delivery-{delivery.pk}"') :]
    assert row.count('no answer · <span class="error">ConnectionRefusedError: [Errno 111] Connection refused</span>') == 2
    assert "status-failed" in row and ">Redeliver</button>" in row
    assert "0 delivered, 1 failed, 0 pending" in html
    assert 'hx-trigger="every 2s"' not in html
