"""API endpoints for annotation projects, their members, assignments and label history. Thin.

Roles are the pages' roles: without one the project answers 404; annotators see and write
only their own assignments and labels; managers (staff count as managers) manage members
and assignments and adjudicate; viewers read.
"""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from alignment.errors import error_answer
from annotation import labels, selectors, services
from annotation.models import AnnotationProject, Assignment, LabelEvent, ProjectMembership
from webapp.api import filters
from webapp.api.access import ANNOTATOR, ID, MANAGER, is_schema_generation, project_for_request
from webapp.api.annotation_serializers import (
    AssignmentCreateSerializer,
    AssignmentSerializer,
    DistributeResultSerializer,
    DistributeStopSerializer,
    LabelConflictSerializer,
    LabelCreateSerializer,
    LabelEventSerializer,
    LabelUpdateSerializer,
    MemberInputSerializer,
    MemberSerializer,
    ProjectCreateSerializer,
    ProjectSerializer,
)
from webapp.api.errors import api_error

PROJECT_ID = OpenApiParameter("project_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The annotation project.")


class ProjectScopedViewSet(viewsets.GenericViewSet):
    """Resolves ``self.project`` and ``self.role`` from the URL before any action; ``read_roles`` None admits every role."""

    lookup_value_regex = ID
    read_roles: tuple[str, ...] | None = None
    project: AnnotationProject
    role: str

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # authentication first: anonymous users get 401, not 404
        self.project, self.role = project_for_request(request, int(kwargs["project_id"]), roles=self.read_roles)

    def require_manager(self) -> None:
        if self.role != MANAGER:
            raise PermissionDenied(f"only the managers of project {self.project.name!r} do this; you are {self.role}")


@extend_schema_view(
    list=extend_schema(summary="Projects where you have a role, with your role"),
    retrieve=extend_schema(summary="A project (404 without a role in it)"),
    create=extend_schema(
        summary="Create a project on one of your corpora; you become its manager",
        request=ProjectCreateSerializer, responses={201: ProjectSerializer},
    ),
)  # fmt: skip
class ProjectViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = ProjectSerializer
    ordering_fields = ["name", "created_at"]
    lookup_value_regex = ID

    def get_queryset(self):
        projects = selectors.projects_with_role(self.request.user)
        projects = projects.select_related("active_model", "suggestion_run")  # their model names, in the list's one query
        return projects.annotate(pair_count=Count("pairs", distinct=True)).order_by("name")

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = ProjectCreateSerializer(
            data=request.data, corpora=selectors.corpora_for_projects(request.user), context={"request": request}
        )
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        # As the project form: without a chosen run, the corpus's latest finished run supplies suggestions.
        run = data["suggestion_run"] or data["corpus"].alignment_runs.filter(status="succeeded").first()
        try:
            project = services.project_create(
                name=data["name"], corpus=data["corpus"], created_by=request.user, pairs=data.get("pairs"), suggestion_run=run,
                guidelines=data["guidelines"], overlap=data["overlap"], strategy=data["strategy"],
            )  # fmt: skip
        except ValueError as error:
            raise api_error(error) from None
        return Response(ProjectSerializer(self.get_queryset().get(pk=project.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="Members of the project and their roles"),
    create=extend_schema(
        summary="Add a member or change their role (managers)", request=MemberInputSerializer, responses={201: MemberSerializer}
    ),
)
class MemberViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin):
    serializer_class = MemberSerializer

    def get_queryset(self):
        if is_schema_generation(self):
            return ProjectMembership.objects.none()
        return self.project.memberships.select_related("user").order_by("role", "user__username")

    def create(self, request: Request, *args, **kwargs) -> Response:
        self.require_manager()
        incoming = MemberInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        membership = services.membership_set(project=self.project, user=data["username"], role=data["role"])
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="Assignments of the project (annotators: their own)"),
    retrieve=extend_schema(summary="One assignment"),
    create=extend_schema(
        summary="Assign one document pair to one annotator (managers)", request=AssignmentCreateSerializer,
        responses={201: AssignmentSerializer},
    ),
)  # fmt: skip
class AssignmentViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin):
    serializer_class = AssignmentSerializer
    filterset_class = filters.AssignmentFilter
    ordering_fields = ["id", "created_at", "completed_at"]

    def get_queryset(self):
        if is_schema_generation(self):
            return Assignment.objects.none()
        assignments = Assignment.objects.filter(project=self.project).select_related("annotator").order_by("pk")
        if self.role == ANNOTATOR:  # as on the project page: annotators see their own work only
            assignments = assignments.filter(annotator=self.request.user)
        return assignments

    def create(self, request: Request, *args, **kwargs) -> Response:
        self.require_manager()
        incoming = AssignmentCreateSerializer(data=request.data, project=self.project)
        incoming.is_valid(raise_exception=True)
        # The serializer checked the pair, the annotator's role and duplicates; the unique constraint guards a
        # concurrent double create.
        assignment = services.assignment_create(project=self.project, **incoming.validated_data)
        return Response(AssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Give every pair of the project to `overlap` annotators, least loaded first (managers); a large project's in the background",
        request=None, responses={200: DistributeResultSerializer, 202: DistributeResultSerializer},
    )  # fmt: skip
    @action(detail=False, methods=["post"])
    def distribute(self, request: Request, project_id: str) -> Response:
        self.require_manager()
        try:
            created = services.assignments_distribute_press(project=self.project)
        except ValueError as error:
            raise api_error(error) from None
        if created is None:
            return Response({"created": None, "in_background": True}, status=status.HTTP_202_ACCEPTED)
        return Response({"created": created, "in_background": False})

    @extend_schema(
        summary="Stop a large project's background distribution (managers)", request=None, responses={200: DistributeStopSerializer}
    )
    @action(detail=False, methods=["post"], url_path="distribute/stop", url_name="distribute-stop")
    def distribute_stop(self, request: Request, project_id: str) -> Response:
        self.require_manager()
        given = services.assignments_distribute_stop(project=self.project)
        return Response({"stopped": given is not None, "pairs_assigned": given})


_WRITE_RESPONSES = {
    400: OpenApiResponse(description="Bad input; the body names the field."),
    403: OpenApiResponse(description="Not your assignment, or adjudication without the manager role."),
    409: OpenApiResponse(LabelConflictSerializer, description="The item's label changed since `expected_previous`."),
}


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="Label history of the project, oldest first (annotators: their own events)"),
    retrieve=extend_schema(summary="One label event"),
    create=extend_schema(
        summary="Record a label (appends an event)",
        description="`source` human or suggestion: your label on one of your assignments. `source` adjudication: a manager's "
        "final label for the item. Each call appends a LabelEvent; rows are never changed.",
        request=LabelCreateSerializer, responses={201: LabelEventSerializer, **_WRITE_RESPONSES},
    ),
    update=extend_schema(
        summary="Change the label of this event's item (appends a new event)",
        description="The event must be the item's latest: the new event replaces it in the history (its `previous`), the old "
        "row stays unchanged. Your own labels only; adjudications by managers.",
        request=LabelUpdateSerializer, responses={200: LabelEventSerializer, **_WRITE_RESPONSES},
    ),
)  # fmt: skip
class LabelViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    serializer_class = LabelEventSerializer
    filterset_class = filters.LabelEventFilter
    ordering_fields = ["id", "created_at"]
    http_method_names = ["get", "post", "put", "head", "options"]

    def get_queryset(self):
        if is_schema_generation(self):
            return LabelEvent.objects.none()
        events = LabelEvent.objects.filter(project=self.project).select_related("annotator").order_by("pk")
        if self.role == ANNOTATOR:  # annotators do not see each other's labels (nor the agreement page)
            events = events.filter(annotator=self.request.user)
        return events

    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = LabelCreateSerializer(data=request.data, project=self.project)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        item = {"pair": data["pair"], "simple_sentence_id": data["simple_sentence"], "complex_sentence_id": data["complex_sentence"]}
        if data["source"] == LabelEvent.Source.ADJUDICATION:
            return self._adjudicate(item, data["label"], data["expected_previous"], status.HTTP_201_CREATED)
        return self._record(item, data["label"], data["expected_previous"], data["source"], data["seconds_spent"], status.HTTP_201_CREATED)

    def update(self, request: Request, *args, **kwargs) -> Response:
        event = self.get_object()
        incoming = LabelUpdateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        item = {"pair": event.pair, "simple_sentence_id": event.simple_sentence_id, "complex_sentence_id": event.complex_sentence_id}
        if event.source == LabelEvent.Source.ADJUDICATION:
            if not data["label"]:
                raise ValidationError({"label": [labels.FINAL_LABEL_NEEDED]})
            return self._adjudicate(item, data["label"], event.pk, status.HTTP_200_OK)
        if event.annotator_id != request.user.pk:
            raise PermissionDenied(f"event {event.pk} is {event.annotator}'s label; you change only your own labels")
        return self._record(item, data["label"], event.pk, LabelEvent.Source.HUMAN, data["seconds_spent"], status.HTTP_200_OK)

    def _record(self, item: dict, label: str, expected: int | None, source: str, seconds: float | None, code: int) -> Response:
        try:
            event = services.label_record(
                project=self.project, annotator=self.request.user, label=label, expected_previous=expected, source=source,
                seconds_spent=seconds, **item,
            )  # fmt: skip
        except services.LabelConflict as conflict:
            return self._conflict(conflict)
        except (PermissionError, ValueError) as error:
            raise api_error(error) from None
        return Response(LabelEventSerializer(event).data, status=code)

    def _adjudicate(self, item: dict, label: str, expected: int | None, code: int) -> Response:
        self.require_manager()  # the review page is the managers' (staff count as managers)
        try:
            event = services.adjudicate(project=self.project, reviewer=self.request.user, label=label, expected_previous=expected, **item)
        except services.LabelConflict as conflict:
            return self._conflict(conflict)
        except ValueError as error:
            raise api_error(error) from None
        return Response(LabelEventSerializer(event).data, status=code)

    @staticmethod
    def _conflict(conflict: services.LabelConflict) -> Response:
        # label_record's conflict carries a stand-in with only id and label: answer with the stored row.
        current = LabelEvent.objects.select_related("annotator").filter(pk=conflict.current.pk).first() if conflict.current else None
        answer = error_answer(conflict)
        body = {"error": answer.message, "current": LabelEventSerializer(current).data if current else None}
        return Response(body, status=answer.status)
