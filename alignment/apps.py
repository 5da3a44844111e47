from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    name = "alignment"
    verbose_name = "Corpora and alignment"

    def ready(self) -> None:
        from alignment.mining import search_backend  # noqa: F401 - registers the faiss system check
