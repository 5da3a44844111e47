from django.urls import path

from alignment import import_views, inspect_views, views
from alignment.mining import views as mining_views

app_name = "alignment"

urlpatterns = [
    path("", views.corpus_list, name="corpus_list"),
    path("corpora/import/", import_views.corpus_import, name="corpus_import"),
    path("corpora/import/preview/", import_views.corpus_import_preview, name="corpus_import_preview"),
    path("imports/<int:job_id>/", import_views.import_job, name="import_job"),
    path("imports/<int:job_id>/cancel/", import_views.import_job_cancel_view, name="import_job_cancel"),
    path("corpora/<int:corpus_id>/", views.corpus_detail, name="corpus_detail"),
    path("corpora/<int:corpus_id>/embed/", views.corpus_embed, name="corpus_embed"),
    path("corpora/<int:corpus_id>/language/", views.corpus_language, name="corpus_language"),
    path("corpora/<int:corpus_id>/jobs/", views.corpus_jobs, name="corpus_jobs"),
    path("embedding-runs/<int:run_id>/retry/", views.embedding_run_retry, name="embedding_run_retry"),
    path("embedding-runs/<int:run_id>/cancel/", views.embedding_run_cancel, name="embedding_run_cancel"),
    path("pairs/<int:pair_id>/", views.pair_detail, name="pair_detail"),
    path("pairs/<int:pair_id>/inspect/", inspect_views.pair_inspect, name="pair_inspect"),
    path("pairs/<int:pair_id>/align/", views.pair_align, name="pair_align"),
    path("candidates/<int:candidate_id>/diff/", inspect_views.candidate_diff, name="candidate_diff"),
    path("corpora/<int:corpus_id>/align/", views.corpus_align, name="corpus_align"),
    path("corpora/<int:corpus_id>/flip/", views.corpus_flip, name="corpus_flip"),
    path("corpora/<int:corpus_id>/mine/", mining_views.mining_start, name="mining_start"),
    path("mining/<int:job_id>/", mining_views.mining_job, name="mining_job"),
    path("mining/<int:job_id>/progress/", mining_views.mining_job_progress, name="mining_job_progress"),
    path("mining/<int:job_id>/cancel/", mining_views.mining_job_cancel_view, name="mining_job_cancel"),
    path("runs/<int:run_id>/", views.alignment_run_detail, name="alignment_run_detail"),
    path("runs/<int:run_id>/progress/", views.alignment_run_progress, name="alignment_run_progress"),
    path("runs/<int:run_id>/cancel/", views.alignment_run_cancel, name="alignment_run_cancel"),
    path("runs/<int:run_id>/resume/", views.alignment_run_resume, name="alignment_run_resume"),
]
