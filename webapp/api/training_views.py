"""API endpoints for a project's trained model versions: read them, promote one. Thin.

Same rules as the project's Models page: managers and viewers read (annotators get 403),
only managers promote, and promotion goes through the registry, which refuses a version
that does not beat the active one unless forced with a reason.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import ModelVersion
from annotation.training import registry
from webapp.api.access import MANAGER, VIEWER, is_schema_generation
from webapp.api.annotation_serializers import ActivationSerializer, ModelVersionSerializer, PromoteSerializer
from webapp.api.annotation_views import PROJECT_ID, ProjectScopedViewSet
from webapp.api.errors import api_error


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="The project's model versions, newest first (managers and viewers)"),
    retrieve=extend_schema(summary="One model version with its metrics"),
)
class ModelVersionViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    serializer_class = ModelVersionSerializer
    read_roles = (MANAGER, VIEWER)
    ordering_fields = ["number", "created_at"]

    def get_queryset(self):
        if is_schema_generation(self):
            return ModelVersion.objects.none()
        return ModelVersion.objects.filter(project=self.project).select_related("created_by").order_by("-number")

    def get_serializer_context(self) -> dict:
        context = super().get_serializer_context()
        if not is_schema_generation(self):
            context["project"] = self.project
        return context

    @extend_schema(
        summary="Make this version the active model and re-align the project's pairs (managers)",
        description="Refused (400) when the version does not beat the active model on the same held-out documents, unless "
        "`force` is set with a `reason`. The re-alignment runs in the background; human labels are never touched.",
        request=PromoteSerializer, responses={200: ActivationSerializer},
    )  # fmt: skip
    @action(detail=True, methods=["post"])
    def promote(self, request: Request, project_id: str, pk: str | None = None) -> Response:
        from alignment.aligning.measures import run_measure

        self.require_manager()
        version = self.get_object()
        incoming = PromoteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        options = incoming.validated_data
        try:
            activation = registry.version_promote(
                version=version, by=request.user, build_measure=run_measure, force=options["force"], reason=options["reason"],
                device=settings.ENCODER_DEVICE,
            )  # fmt: skip
        except ValueError as error:
            raise api_error(error) from None
        return Response(ActivationSerializer(activation).data)
