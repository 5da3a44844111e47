"""API endpoints for imports: upload files into a corpus (multipart), then watch the import job. Thin.

The upload goes the Import page's way: the same upload guard (``import_upload_guard``: the
size limits, checked while the body streams in), the same form (``CorpusImportForm``) and the
same service (``import_job_create``), which stages the files and queues the job for a worker.
Jobs are visible to the user who started them, and to staff (``selectors.import_jobs_for_user``).
"""

from __future__ import annotations

from django.http import QueryDict
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from alignment import selectors
from alignment.forms import CorpusImportForm
from alignment.importing.jobs import import_job_cancel, import_job_create
from alignment.importing.models import ImportJob
from alignment.importing.uploads import ImportUploadLimit, import_upload_guard
from webapp.api.access import ID, is_schema_generation
from webapp.api.errors import api_error
from webapp.api.import_serializers import ImportCreateSerializer, ImportJobSerializer


class UploadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "upload_too_large"


class UploadRefusalSerializer(serializers.Serializer):
    detail = serializers.CharField(
        help_text="Which limit the upload passed (IMPORT_MAX_FILE_BYTES, IMPORT_MAX_REQUEST_BYTES or IMPORT_MAX_FILES)."
    )


def _with_form_defaults(data: QueryDict) -> QueryDict:
    """The posted fields, with the form's initial value (what the page shows) for each one left out."""
    filled = data.copy()
    for name, field in CorpusImportForm.base_fields.items():
        if name not in filled and name != "drop_level_header" and field.initial not in (None, ""):
            filled[name] = str(field.initial)
    return filled


def _form_errors(form: CorpusImportForm) -> dict[str, list[str]]:
    return {("non_field_errors" if name == "__all__" else name): list(messages) for name, messages in form.errors.items()}


@extend_schema_view(
    list=extend_schema(summary="Your import jobs, newest first (staff: everyone's)"),
    retrieve=extend_schema(summary="An import job: status, progress, the per-file report and what it queued"),
    create=extend_schema(
        summary="Import files into a corpus (a new name creates it)",
        description=(
            "The Import page's form as multipart/form-data. The files are checked and staged at once (202); a worker imports "
            "them, then queues embedding and an alignment run. Poll the job's `url` until `status` is succeeded or failed. "
            "Files that cannot be read (encoding, format) are reported per file in `results`."
        ),
        request={"multipart/form-data": ImportCreateSerializer},
        responses={
            202: ImportJobSerializer,
            400: OpenApiResponse(description="Bad input, or a corpus you may not add to; the body names the field."),
            413: OpenApiResponse(UploadRefusalSerializer, description="A file or the whole upload is over its limit, or it has too many files; nothing stored."),
        },
    ),
)  # fmt: skip
class ImportJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = ImportJobSerializer
    parser_classes = [MultiPartParser]
    takes_uploads = True  # its body is bounded by the import's upload guard, not by DATA_UPLOAD_MAX_MEMORY_SIZE
    ordering_fields = ["id", "created_at", "status"]
    lookup_value_regex = ID
    upload_limit: ImportUploadLimit | None = None

    def get_queryset(self):
        if is_schema_generation(self):  # no user to ask about
            return ImportJob.objects.none()
        return selectors.import_jobs_for_user(self.request.user).order_by("-pk")

    def initial(self, request: Request, *args, **kwargs) -> None:
        """Install the upload limit before anything reads the body: DRF parses it lazily, and the session
        login's CSRF check is the first to ask for it. An announced oversize body is refused unread."""
        if request.method == "POST":
            self.upload_limit = import_upload_guard(request)
            if self.upload_limit.refusal:
                raise UploadTooLarge(self.upload_limit.refusal)
        super().initial(request, *args, **kwargs)

    def create(self, request: Request, *args, **kwargs) -> Response:
        uploaded = request.FILES  # the body is parsed here (unless the CSRF check did), through the limit
        if self.upload_limit is not None and self.upload_limit.refusal:
            raise UploadTooLarge(self.upload_limit.refusal)
        form = CorpusImportForm(_with_form_defaults(request.POST), uploaded)
        if not form.is_valid():
            raise ValidationError(_form_errors(form))
        data = form.cleaned_data
        try:
            job = import_job_create(
                user=request.user, corpus_name=data["corpus_name"], language=data["language"], pairing=data["pairing"],
                options=form.import_options(max_file_bytes=self.upload_limit.max_file_bytes),
                files=((f.name, f.read()) for f in data["files"]),
            )  # fmt: skip
        except ValueError as error:
            raise api_error(error) from None
        body = self.get_serializer(self.get_queryset().get(pk=job.pk)).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        summary="Cancel an import job (who started it, and staff)",
        description="One not started yet is cancelled at once. A running one stops before its next file: the files done "
        "stay imported and paired, no embedding or alignment is queued, and the job ends `cancelled`.",
        request=None, responses=ImportJobSerializer,
    )  # fmt: skip
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        job = import_job_cancel(job=self.get_object())
        return Response(self.get_serializer(self.get_queryset().get(pk=job.pk)).data)
