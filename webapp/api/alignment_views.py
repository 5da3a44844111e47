"""API endpoints for corpora, documents, document pairs, alignment runs and candidates. Thin.

Every queryset starts from ``corpora_visible_to``, as the pages do: a corpus the user may
not see, and everything in it, answers 404.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from alignment import selectors, services
from alignment.aligning import service as aligning
from alignment.forms import AlignmentRunForm
from alignment.models import AlignmentRun, CandidateAlignment, Document, DocumentPair
from webapp.api import filters
from webapp.api.access import ID, require_job_control
from webapp.api.alignment_serializers import (
    AlignmentRunCreateSerializer,
    AlignmentRunSerializer,
    CandidateSerializer,
    CorpusCreateSerializer,
    CorpusSerializer,
    DocumentDetailSerializer,
    DocumentSerializer,
    PairSerializer,
)
from webapp.api.errors import api_error


def _visible_pairs(request: Request):
    return DocumentPair.objects.filter(corpus__in=selectors.corpora_visible_to(request.user))


@extend_schema_view(
    list=extend_schema(summary="Corpora you may see: your own, the shared ones (all for staff)"),
    create=extend_schema(summary="Create an empty corpus", request=CorpusCreateSerializer, responses={201: CorpusSerializer}),
)
class CorpusViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = CorpusSerializer
    filterset_class = filters.CorpusFilter
    ordering_fields = ["name", "created_at", "language"]
    lookup_value_regex = ID

    def get_queryset(self):
        return selectors.corpus_list_with_counts(self.request.user).order_by("name")

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = CorpusCreateSerializer(data=request.data, context={"request": request})
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        try:
            with transaction.atomic():
                corpus, created = services.corpus_get_or_create(owner=request.user, **data)
                if not created:  # someone took the name between the check and the insert
                    raise ValidationError({"name": [selectors.corpus_name_refusal(request.user, data["name"])]})
        except ValueError as error:
            raise api_error(error) from None
        return Response(CorpusSerializer(self.get_queryset().get(pk=corpus.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(summary="Documents of the corpora you may see (without their text)"),
    retrieve=extend_schema(summary="A document with its text, paragraphs and sentences"),
)
class DocumentViewSet(viewsets.ReadOnlyModelViewSet):
    filterset_class = filters.DocumentFilter
    ordering_fields = ["external_id", "level", "created_at"]
    lookup_value_regex = ID

    def get_queryset(self):
        documents = Document.objects.filter(corpus__in=selectors.corpora_visible_to(self.request.user))
        if self.action == "list":
            return documents.defer("raw_text", "source").order_by("corpus_id", "external_id", "level")
        return documents

    def get_serializer_class(self):
        return DocumentDetailSerializer if self.action == "retrieve" else DocumentSerializer

    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        document = self.get_object()
        rows = selectors.document_paragraphs(document.pk)
        for paragraph, sentences in rows:
            paragraph.sentence_rows = sentences
        document.paragraph_rows = [paragraph for paragraph, _ in rows]
        return Response(DocumentDetailSerializer(document).data)


@extend_schema_view(list=extend_schema(summary="Document pairs (complex → simple) of the corpora you may see"))
class PairViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = PairSerializer
    filterset_class = filters.PairFilter
    ordering_fields = ["id", "created_at"]
    lookup_value_regex = ID

    def get_queryset(self):
        return _visible_pairs(self.request).select_related("complex_document", "simple_document").order_by("pk")


@extend_schema_view(
    list=extend_schema(summary="Alignment runs of the corpora you may see, newest first"),
    retrieve=extend_schema(summary="A run's status and progress"),
    create=extend_schema(
        summary="Start an alignment run (corpus owner and staff)",
        description="Queues a run over the given pairs (or the whole corpus) for the background worker, as the corpus page does.",
        request=AlignmentRunCreateSerializer, responses={201: AlignmentRunSerializer},
    ),
)  # fmt: skip
class AlignmentRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = AlignmentRunSerializer
    filterset_class = filters.AlignmentRunFilter
    ordering_fields = ["created_at", "status", "id"]
    lookup_value_regex = ID

    def get_queryset(self):
        visible = selectors.corpora_visible_to(self.request.user)
        return AlignmentRun.objects.filter(corpus__in=visible).select_related("corpus", "created_by").order_by("-created_at", "-pk")

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = AlignmentRunCreateSerializer(
            data=request.data, corpora=selectors.corpora_visible_to(request.user), pairs=_visible_pairs(request)
        )
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        require_job_control(request, data["corpus"])
        form = AlignmentRunForm(
            {"measure": data["measure"], "paragraph_variant": data["paragraph_variant"], "also_score": data["also_score"]}
        )
        if not form.is_valid():  # the serializer offers the form's choices, so this only guards against drift
            raise ValidationError(form.errors)
        try:
            run = aligning.alignment_run_create(
                corpus=data["corpus"], pairs=data.get("pairs"), created_by=request.user, model_dir=settings.ALIGNER_MODEL_DIR,
                **form.run_arguments(),
            )  # fmt: skip
        except ValueError as error:
            raise api_error(error) from None
        return Response(AlignmentRunSerializer(self.get_queryset().get(pk=run.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel a run (corpus owner and staff)",
        description="A queued run is cancelled at once; a running one stops after the pair in flight, which is kept.",
        request=None, responses=AlignmentRunSerializer,
    )  # fmt: skip
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        require_job_control(request, run.corpus)
        aligning.alignment_run_cancel(run=run)
        return Response(AlignmentRunSerializer(self.get_queryset().get(pk=run.pk)).data)


@extend_schema_view(
    list=extend_schema(summary="Candidate alignments (sentence pairs an aligner scored), filterable by run, pair, label, score"),
)
class CandidateViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = CandidateSerializer
    filterset_class = filters.CandidateFilter
    ordering_fields = ["id", "score", "crf_marginal", "disagreement"]
    lookup_value_regex = ID

    def get_queryset(self):
        visible = selectors.corpora_visible_to(self.request.user)
        return CandidateAlignment.objects.filter(pair__corpus__in=visible).select_related("simple_sentence", "complex_sentence")
