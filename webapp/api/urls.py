"""The REST API (Django REST framework): routes, token login, the OpenAPI schema and its docs pages.

POST /api/auth/token/   {"username", "password"} -> {"token", "expires_at"}; send it as ``Authorization: Token <token>``
GET  /api/auth/tokens/  my tokens; DELETE /api/auth/tokens/<id>/ revokes one (webapp/api/token_views.py)
GET  /api/schema/       OpenAPI 3 (YAML; ``?format=json`` for JSON)
GET  /api/docs/         Swagger UI, /api/redoc/ ReDoc (assets served from our static files)
"""

from __future__ import annotations

from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from webapp.api import (
    alignment_views,
    annotation_views,
    export_views,
    import_views,
    item_event_views,
    mining_views,
    token_views,
    training_views,
)

app_name = "api"

PROJECT = r"projects/(?P<project_id>[0-9]+)"

# The docs pages' third-party UIs set inline styles (and ReDoc loads web fonts and runs a blob: worker);
# the app's strict Content-Security-Policy is relaxed for these two URLs only. Swagger's start-up
# script comes from the split view's own URL, so no inline script is allowed even here.
_docs_csp = csp_update(
    {
        "style-src": ["'unsafe-inline'", "https://fonts.googleapis.com"],
        "font-src": ["'self'", "https://fonts.gstatic.com"],
        "worker-src": ["'self'", "blob:"],
    }
)

router = DefaultRouter()
router.register("corpora", alignment_views.CorpusViewSet, basename="corpus")
router.register("documents", alignment_views.DocumentViewSet, basename="document")
router.register("pairs", alignment_views.PairViewSet, basename="pair")
router.register("alignment-runs", alignment_views.AlignmentRunViewSet, basename="alignment-run")
router.register("candidates", alignment_views.CandidateViewSet, basename="candidate")
router.register("mining-jobs", mining_views.MiningJobViewSet, basename="mining-job")
router.register("imports", import_views.ImportJobViewSet, basename="import")
router.register("projects", annotation_views.ProjectViewSet, basename="project")
router.register(f"{PROJECT}/members", annotation_views.MemberViewSet, basename="project-member")
router.register(f"{PROJECT}/assignments", annotation_views.AssignmentViewSet, basename="project-assignment")
router.register(f"{PROJECT}/labels", annotation_views.LabelViewSet, basename="project-label")
router.register(f"{PROJECT}/item-events", item_event_views.ItemEventViewSet, basename="project-item-event")
router.register(f"{PROJECT}/model-versions", training_views.ModelVersionViewSet, basename="project-model-version")
router.register(f"{PROJECT}/exports", export_views.ExportJobViewSet, basename="project-export")

urlpatterns = [
    path("auth/token/", token_views.TokenLoginView.as_view(), name="token"),
    path("auth/tokens/", token_views.ApiTokenListView.as_view(), name="token-list"),
    path("auth/tokens/<int:pk>/", token_views.ApiTokenRevokeView.as_view(), name="token-revoke"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", _docs_csp(SpectacularSwaggerSplitView.as_view(url_name="api:schema")), name="docs"),
    path("redoc/", _docs_csp(SpectacularRedocView.as_view(url_name="api:schema")), name="redoc"),
    *router.urls,
]
