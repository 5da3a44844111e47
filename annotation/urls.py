from django.urls import include, path

from annotation import views
from annotation.adjudication import views as adjudication_views
from annotation.labelling import views as annotate_views
from annotation.projects import views as project_views
from annotation.training import views as training_views

app_name = "annotation"

urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("projects/", views.project_list, name="project_list"),
    path("mining/<int:job_id>/send/", views.mined_pairs_send, name="mined_pairs_send"),
    path("projects/new/", views.project_create, name="project_create"),
    path("projects/<int:project_id>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/members/", project_views.project_members, name="project_members"),
    path("projects/<int:project_id>/members/search/", project_views.project_member_search, name="project_member_search"),
    path("projects/<int:project_id>/members/invite/", project_views.project_member_invite, name="project_member_invite"),
    path("projects/<int:project_id>/assign/", project_views.project_assign, name="project_assign"),
    path("projects/<int:project_id>/assign/stop/", project_views.project_assign_stop, name="project_assign_stop"),
    path("projects/<int:project_id>/assign/progress/", project_views.project_assign_progress, name="project_assign_progress"),
    path("projects/<int:project_id>/queue/", views.project_queue, name="project_queue"),
    path("projects/<int:project_id>/bulk-target/", views.project_bulk_target, name="project_bulk_target"),
    path("projects/<int:project_id>/gold-items/", views.project_gold_items, name="project_gold_items"),
    path("projects/<int:project_id>/agreement/", adjudication_views.project_agreement_view, name="project_agreement"),
    path("projects/<int:project_id>/models/", training_views.project_models, name="project_models"),
    path("projects/<int:project_id>/models/train/", training_views.training_start, name="training_start"),
    path("projects/<int:project_id>/models/rollback/", training_views.version_rollback, name="version_rollback"),
    path("projects/<int:project_id>/models/jobs/<int:job_id>/", training_views.training_job_card, name="training_job"),
    path("projects/<int:project_id>/models/jobs/<int:job_id>/cancel/", training_views.training_cancel, name="training_cancel"),
    path("projects/<int:project_id>/models/<int:version_id>/promote/", training_views.version_promote, name="version_promote"),
    path("projects/<int:project_id>/exports/", include("annotation.export.urls")),
    path("projects/<int:project_id>/pairs/<int:pair_id>/review/", views.pair_review, name="pair_review"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/adjudicate/", views.pair_adjudicate, name="pair_adjudicate"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/verify/", views.pair_verify, name="pair_verify"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/paragraphs/", views.paragraphs_step, name="paragraphs_step"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/", annotate_views.annotate_pair, name="annotate_pair"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/state/", annotate_views.annotate_state, name="annotate_state"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/label/", annotate_views.label_save, name="label_save"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/edit/", annotate_views.label_edit, name="label_edit"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/undo/", annotate_views.label_undo, name="label_undo"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/suggestions/", annotate_views.suggestions_refresh, name="suggestions_refresh"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/item-event/", annotate_views.item_event_save, name="item_event_save"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/done/", annotate_views.assignment_done, name="assignment_done"),
    path("projects/<int:project_id>/pairs/<int:pair_id>/sentences/", annotate_views.segment_edit, name="segment_edit"),
]
