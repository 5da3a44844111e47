from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    name = "alignment"
    verbose_name = "Corpora and alignment"

    def ready(self) -> None:
        from alignment import checks  # noqa: F401 - registers the app's system checks
