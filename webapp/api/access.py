"""Who may do what through the API: the same rules as the pages, expressed for DRF views.

The pages decide access with the apps' selectors (``corpora_visible_to``,
``project_get_for_user``, ``user_may_run_jobs``); these helpers call the same selectors
so the API can never be more permissive than the UI. Without a role in a project the
project does not exist for the user (404, no existence leak); with the wrong role the
answer is 403 with a message that says which role is needed.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from alignment.models import Corpus
from alignment.selectors import user_may_run_jobs
from annotation.models import AnnotationProject, ProjectMembership
from annotation.selectors import project_get_for_user

MANAGER = ProjectMembership.Role.MANAGER.value
ANNOTATOR = ProjectMembership.Role.ANNOTATOR.value
VIEWER = ProjectMembership.Role.VIEWER.value
ID = "[0-9]+"  # lookup regex of every detail route: ids are whole numbers


class ApiPagination(PageNumberPagination):
    """The settings' page size, with ``page_size`` as an optional query parameter (at most 500)."""

    page_size_query_param = "page_size"
    max_page_size = 500


def project_for_request(request: Request, project_id: int, *, roles: tuple[str, ...] | None = None) -> tuple[AnnotationProject, str]:
    """The project and the user's role; 404 without a role, 403 when the role is not in ``roles``."""
    try:
        project, role = project_get_for_user(request.user, project_id)
    except Http404:
        raise NotFound("no such project") from None
    if roles is not None and role not in roles:
        raise PermissionDenied(f"this needs the role {' or '.join(roles)} in project {project.name!r}; you are {role}")
    return project, role


def require_job_control(request: Request, corpus: Corpus) -> None:
    """Starting and cancelling alignment runs: the corpus owner and staff only (as on the corpus page)."""
    if not user_may_run_jobs(request.user, corpus):
        raise PermissionDenied(f"only the owner of corpus {corpus.name!r} and staff start or cancel alignment runs")


def is_schema_generation(view: object) -> bool:
    """drf-spectacular calls ``get_queryset`` without a request's URL kwargs; views then return an empty queryset."""
    return bool(getattr(view, "swagger_fake_view", False))
