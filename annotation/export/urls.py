from __future__ import annotations

from django.urls import path

from annotation.export import views

urlpatterns = [
    path("", views.project_exports, name="project_exports"),
    path("start/", views.export_start, name="export_start"),
    path("<int:job_id>/", views.export_job_card, name="export_job"),
    path("<int:job_id>/cancel/", views.export_job_cancel_view, name="export_job_cancel"),
    path("<int:job_id>/files/<path:name>", views.export_file, name="export_file"),
]
