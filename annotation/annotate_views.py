"""Placeholder: the main annotation screen is being written."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse


def annotate_pair(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    raise Http404("not written yet")


def label_save(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    raise Http404("not written yet")


def label_undo(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    raise Http404("not written yet")


def assignment_done(request: HttpRequest, project_id: int, pair_id: int) -> HttpResponse:
    raise Http404("not written yet")
