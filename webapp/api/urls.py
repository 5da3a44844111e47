"""The REST API (Django REST framework): routes, token login, the OpenAPI schema and its docs pages.

    POST /api/auth/token/   {"username", "password"} -> {"token"}; send it as ``Authorization: Token <token>``
    GET  /api/schema/       OpenAPI 3 (YAML; ``?format=json`` for JSON)
    GET  /api/docs/         Swagger UI, /api/redoc/ ReDoc (assets served from our static files)
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from webapp.api import alignment_views, annotation_views, export_views, training_views

app_name = "api"

PROJECT = r"projects/(?P<project_id>[0-9]+)"

router = DefaultRouter()
router.register("corpora", alignment_views.CorpusViewSet, basename="corpus")
router.register("documents", alignment_views.DocumentViewSet, basename="document")
router.register("pairs", alignment_views.PairViewSet, basename="pair")
router.register("alignment-runs", alignment_views.AlignmentRunViewSet, basename="alignment-run")
router.register("candidates", alignment_views.CandidateViewSet, basename="candidate")
router.register("projects", annotation_views.ProjectViewSet, basename="project")
router.register(f"{PROJECT}/members", annotation_views.MemberViewSet, basename="project-member")
router.register(f"{PROJECT}/assignments", annotation_views.AssignmentViewSet, basename="project-assignment")
router.register(f"{PROJECT}/labels", annotation_views.LabelViewSet, basename="project-label")
router.register(f"{PROJECT}/model-versions", training_views.ModelVersionViewSet, basename="project-model-version")
router.register(f"{PROJECT}/exports", export_views.ExportJobViewSet, basename="project-export")

urlpatterns = [
    path("auth/token/", obtain_auth_token, name="token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    *router.urls,
]
