"""API endpoint for the annotators' skips, flags and comments on a project's items. Read-only and thin.

The same rules as the label history: without a role the project answers 404; annotators
list only their own events; managers, viewers and staff list everyone's.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins

from annotation.labelling.item_events import item_events_visible
from annotation.models import ItemEvent
from webapp.api import filters
from webapp.api.access import is_schema_generation
from webapp.api.annotation_serializers import ItemEventSerializer
from webapp.api.annotation_views import PROJECT_ID, ProjectScopedViewSet


@extend_schema(parameters=[PROJECT_ID])
@extend_schema_view(
    list=extend_schema(summary="Skips, flags and comments on the project's items, oldest first (annotators: their own)"),
    retrieve=extend_schema(summary="One item event"),
)
class ItemEventViewSet(ProjectScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    serializer_class = ItemEventSerializer
    filterset_class = filters.ItemEventFilter
    ordering_fields = ["id", "created_at"]

    def get_queryset(self):
        if is_schema_generation(self):
            return ItemEvent.objects.none()
        return item_events_visible(self.project, self.request.user, self.role).select_related("annotator").order_by("pk")
