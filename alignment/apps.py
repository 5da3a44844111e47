from django.apps import AppConfig


class AlignmentConfig(AppConfig):
    name = "alignment"
    verbose_name = "Corpora and alignment"
