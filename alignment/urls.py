from django.urls import path

from alignment import views

app_name = "alignment"

urlpatterns = [
    path("", views.corpus_list, name="corpus_list"),
    path("corpora/import/", views.corpus_import, name="corpus_import"),
    path("corpora/<int:corpus_id>/", views.corpus_detail, name="corpus_detail"),
    path("corpora/<int:corpus_id>/embed/", views.corpus_embed, name="corpus_embed"),
    path("corpora/<int:corpus_id>/jobs/", views.corpus_jobs, name="corpus_jobs"),
    path("embedding-runs/<int:run_id>/retry/", views.embedding_run_retry, name="embedding_run_retry"),
    path("pairs/<int:pair_id>/", views.pair_detail, name="pair_detail"),
]
