"""Webhooks: HMAC-signed event deliveries to subscribers' URLs, retried with backoff, logged per delivery."""

from __future__ import annotations

from django.urls import path

from webapp.webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("projects/<int:project_id>/", views.project_webhooks, name="project_webhooks"),
    path("projects/<int:project_id>/new/", views.webhook_create, name="webhook_create"),
    path("projects/<int:project_id>/<int:webhook_id>/toggle/", views.webhook_toggle, name="webhook_toggle"),
    path("projects/<int:project_id>/<int:webhook_id>/delete/", views.webhook_delete, name="webhook_delete"),
    path("projects/<int:project_id>/<int:webhook_id>/ping/", views.webhook_ping, name="webhook_ping"),
    path("projects/<int:project_id>/<int:webhook_id>/deliveries/", views.webhook_log, name="webhook_log"),
    path(
        "projects/<int:project_id>/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/",
        views.delivery_redeliver,
        name="delivery_redeliver",
    ),
]
