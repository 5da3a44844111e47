"""Project pages: list, create, detail with progress, members and roles, assignment. Thin."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse


def project_list(request: HttpRequest) -> HttpResponse:
    raise Http404("not written yet")


def project_create(request: HttpRequest) -> HttpResponse:
    raise Http404("not written yet")


def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    raise Http404("not written yet")


def project_members(request: HttpRequest, project_id: int) -> HttpResponse:
    raise Http404("not written yet")


def project_assign(request: HttpRequest, project_id: int) -> HttpResponse:
    raise Http404("not written yet")
