"""API endpoints for mining jobs: list, start, read and cancel them, and page through their mined pairs. Thin.

The rules are the pages': a job is there for whoever may see both its corpora (else 404); only the source
corpus's owner and staff start and cancel one (403). Starting goes through ``alignment.mining.starting``, the
start page's own checks, so a bad setting is a 400 under its name and nothing is stored or queued.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from alignment import selectors
from alignment.mining import browse
from alignment.mining.models import MiningJob
from alignment.mining.selectors import mining_jobs_visible_to
from alignment.mining.service import mining_job_statistics
from alignment.mining.starting import mining_job_start, mining_job_stop
from webapp.api import filters
from webapp.api.access import ID
from webapp.api.errors import api_error
from webapp.api.mining_serializers import (
    MinedPairSerializer,
    MiningJobCreateSerializer,
    MiningJobDetailSerializer,
    MiningJobSerializer,
    MiningJobSourceSerializer,
)

PAIR_FILTERS = [
    *(
        OpenApiParameter(f"{name}_{end}", OpenApiTypes.DOUBLE, description=f"{name.replace('_', ' ')} at {side} this.")
        for name in browse.RANGES + browse.ACCESS
        for end, side in (("min", "least"), ("max", "most"))
    ),
    OpenApiParameter("shape", str, enum=list(browse.SHAPES), description="Sentences per side: 1:1, 1:n, n:1 or n:m."),
    OpenApiParameter(
        "q", str, description=f"Words in either side (PostgreSQL websearch syntax; at most {browse.MAX_QUERY_CHARS} characters)."
    ),
    OpenApiParameter(
        "sort", str, enum=list(browse.SORTS), description="; ".join(f"`{key}`: {name}" for key, name in browse.SORT_NAMES.items())
    ),
]


@extend_schema_view(
    list=extend_schema(summary="Mining jobs whose corpora you may see, newest first"),
    retrieve=extend_schema(summary="A mining job's status, progress and statistics", responses=MiningJobDetailSerializer),
    create=extend_schema(
        summary="Start a mining job (the source corpus's owner and staff)",
        description="The settings of the corpus page's *Mine pairs* form, by its field names; a setting left out takes "
        "the form's value. A bad one is a 400 under its name, and nothing is queued. The same corpora, method and "
        "settings answer the existing job (200; queued again if it had failed or was cancelled) instead of a new one (201).",
        request=MiningJobCreateSerializer, responses={201: MiningJobDetailSerializer, 200: MiningJobDetailSerializer},
    ),
)  # fmt: skip
class MiningJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = MiningJobSerializer
    filterset_class = filters.MiningJobFilter
    ordering_fields = ["created_at", "status", "id"]
    lookup_value_regex = ID

    def get_queryset(self):
        return mining_jobs_visible_to(self.request.user)

    def _detail(self, job: MiningJob) -> dict:
        job.statistics = mining_job_statistics(job)
        return MiningJobDetailSerializer(job).data

    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        return Response(self._detail(self.get_object()))

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = MiningJobSourceSerializer(data=request.data, corpora=selectors.corpora_visible_to(request.user))
        incoming.is_valid(raise_exception=True)
        settings = {key: request.data[key] for key in request.data if key not in incoming.fields}
        try:
            job, created = mining_job_start(
                corpus=incoming.validated_data["source_corpus"], method=incoming.validated_data["method"], data=settings,
                user=request.user,
            )  # fmt: skip
        except (ValueError, PermissionError) as error:
            raise api_error(error) from None
        answer = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(self._detail(self.get_queryset().get(pk=job.pk)), status=answer)

    @extend_schema(
        summary="Cancel a mining job (the source corpus's owner and staff)",
        description="Its shards stop after the document (LHA) or batch (MUSS) in flight; the pairs found so far are kept. "
        "Starting it again with the same settings resumes it.",
        request=None, responses=MiningJobDetailSerializer,
    )  # fmt: skip
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        try:
            job = mining_job_stop(job=self.get_object(), user=request.user)
        except PermissionError as refusal:
            raise api_error(refusal) from None
        return Response(self._detail(job))

    @extend_schema(
        summary="A mining job's pairs, filtered and sorted as on its page",
        description="A bad filter is a 400 under its name.",
        parameters=PAIR_FILTERS, responses=MinedPairSerializer(many=True),
    )  # fmt: skip
    @action(detail=True, methods=["get"], filter_backends=[])
    def pairs(self, request: Request, pk: str | None = None) -> Response:
        job = self.get_object()
        try:
            chosen = browse.filters_from(request.query_params)
        except browse.FilterError as error:
            raise api_error(error) from None
        page = self.paginate_queryset(browse.mined_pairs(job, chosen))
        return self.get_paginated_response(MinedPairSerializer(page, many=True).data)
