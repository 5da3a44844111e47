"""API endpoints for gold dataset exports: start one, watch it, download its files. Managers only, as the Exports page.

The options are judged by ``annotation.export.service.export_options_clean`` (the page's
rules); its messages start with the option's name, which becomes the error's field here.
"""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.export.models import ExportJob
from annotation.export.service import ARCHIVE, export_job_cancel, export_job_create
from annotation.export.simplification import METRICS
from annotation.export.writers import FORMATS
from webapp.api.access import MANAGER, is_schema_generation
from webapp.api.annotation_views import PROJECT_ID, ProjectScopedViewSet
from webapp.api.errors import api_error
from webapp.api.schema_fields import enum_field

FORMAT_CHOICES = [(name, name) for name in FORMATS]


class ExportFileSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Path inside the export; pass it as `name` to the download action.")
    bytes = serializers.IntegerField()
    sha256 = serializers.CharField()


class ExportJobSerializer(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)
    files = ExportFileSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ExportJob
        fields = [
            "id", "status", "percent", "pairs_total", "pairs_done", "items_written", "options", "files", "error", "created_by",
            "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class FractionsSerializer(serializers.Serializer):
    train = serializers.FloatField()
    dev = serializers.FloatField()
    test = serializers.FloatField()


class ExportCreateSerializer(serializers.Serializer):
    """The Exports page's options; values are judged by the export service."""

    formats = serializers.ListField(child=enum_field("ExportFormatEnum", FORMAT_CHOICES), required=False, help_text="Default: all.")
    include_majority = serializers.BooleanField(default=False, help_text="Add the unadjudicated majority label of unsettled items.")
    seed = serializers.IntegerField(default=0, min_value=-(2**63), max_value=2**63 - 1, help_text="Seeds the document-level split.")
    fractions = FractionsSerializer(required=False, help_text="Train / dev / test shares (sum 1). Default 0.7 / 0.15 / 0.15.")
    drop_identical = serializers.BooleanField(default=False, help_text="Simplification set only: drop identical pairs.")
    score_metric = enum_field("ScoreMetricEnum", [(m, m) for m in METRICS], required=False, allow_null=True, default=None)
    score_min = serializers.FloatField(required=False, allow_null=True, default=None)
    score_max = serializers.FloatField(required=False, allow_null=True, default=None)


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="The project's export jobs, newest first (managers)"),
    retrieve=extend_schema(summary="One export job: status, progress and, once succeeded, its files"),
    create=extend_schema(
        summary="Start a gold dataset export (managers)", request=ExportCreateSerializer, responses={201: ExportJobSerializer}
    ),
)
class ExportJobViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin):
    serializer_class = ExportJobSerializer
    read_roles = (MANAGER,)
    ordering_fields = ["id", "created_at", "status"]

    def get_queryset(self):
        if is_schema_generation(self):
            return ExportJob.objects.none()
        return ExportJob.objects.filter(project=self.project).select_related("created_by").order_by("-pk")

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = ExportCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        options = dict(incoming.validated_data)
        if "fractions" in options:
            options["fractions"] = dict(options["fractions"])
        try:
            job = export_job_create(project=self.project, created_by=request.user, **options)
        except ValueError as error:  # ExportDataError included: nothing to export yet
            raise api_error(error) from None
        return Response(ExportJobSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel an export job (the project's managers)",
        description="One waiting is cancelled at once; a running one stops within its next 50 pairs and removes what it wrote.",
        request=None, responses=ExportJobSerializer,
    )  # fmt: skip
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, project_id: str, pk: str | None = None) -> Response:
        return Response(ExportJobSerializer(export_job_cancel(job=self.get_object())).data)

    @extend_schema(
        summary="Download one file of a succeeded export (default: the zip of everything)",
        parameters=[OpenApiParameter("name", str, description=f"A name from the job's `files`; default {ARCHIVE}.")],
        responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file.")},
    )  # fmt: skip
    @action(detail=True, methods=["get"])
    def download(self, request: Request, project_id: str, pk: str | None = None) -> FileResponse:
        job = self.get_object()
        name = request.query_params.get("name") or ARCHIVE
        path = job.file_path(name)  # None for anything the job did not list: no path tricks
        if path is None or not path.is_file():
            raise NotFound(
                f"export job {job.pk} has no file called {name!r}" + ("" if job.status == "succeeded" else f" (it is {job.status})")
            )
        download = f"export-{self.project.pk}-{job.pk}.zip" if name == ARCHIVE else name.replace("/", "-")
        return FileResponse(path.open("rb"), as_attachment=True, filename=download, content_type="application/octet-stream")
