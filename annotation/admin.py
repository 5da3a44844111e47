from django.contrib import admin

from annotation.models import AnnotationProject, Assignment, ItemEvent, LabelEvent, ProjectMembership


class MembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    raw_id_fields = ["user"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """An admin that can look but never add, change or delete: for the append-only event streams."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AnnotationProject)
class AnnotationProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "corpus", "strategy", "overlap", "suggestion_run", "created_at"]
    raw_id_fields = ["pairs", "suggestion_run"]
    inlines = [MembershipInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["project", "pair", "annotator", "completed_at"]
    list_filter = ["project"]
    raw_id_fields = ["pair", "annotator"]


@admin.register(LabelEvent)
class LabelEventAdmin(ReadOnlyAdmin):
    """Read-only: the history is append-only, so the admin can look but never edit or delete."""

    list_display = [
        "pk", "project", "annotator", "simple_sentence", "complex_sentence", "old_label", "new_label", "source", "suggestion_run",
        "created_at",
    ]  # fmt: skip
    list_filter = ["project", "source", "new_label"]


@admin.register(ItemEvent)
class ItemEventAdmin(ReadOnlyAdmin):
    """Read-only like the label history: skips, flags and comments are append-only events."""

    list_display = ["pk", "project", "annotator", "pair", "kind", "text", "simple_sentence", "complex_sentence", "created_at"]
    list_filter = ["project", "kind"]
    search_fields = ["text", "annotator__username"]
    list_select_related = ["project", "annotator", "pair", "simple_sentence", "complex_sentence"]
