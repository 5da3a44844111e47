from __future__ import annotations

import gc

from django.apps import AppConfig
from django.conf import settings


class WebappConfig(AppConfig):
    name = "webapp"
    verbose_name = "Web app and webhooks"

    def ready(self) -> None:
        collector_tune(settings.GC_YOUNG_THRESHOLD)
        from django.db.models.signals import post_save

        from alignment.models import AlignmentRun
        from alignment.signals import run_finished
        from annotation.export.signals import export_finished
        from annotation.models import LabelEvent
        from webapp.webhooks import events

        post_save.connect(events.label_event_saved, sender=LabelEvent, dispatch_uid="webhooks.label_event")
        run_finished.connect(events.run_finished_received, sender=AlignmentRun, dispatch_uid="webhooks.run_finished")
        export_finished.connect(events.export_finished_received, dispatch_uid="webhooks.export_finished")


def collector_tune(young: int) -> None:
    """Every process of the app (web, worker, command) collects its youngest generation after ``young`` new container
    objects instead of Python's 700 (0 leaves the default); the older generations' ratios stay Python's."""
    if young:
        _, middle, old = gc.get_threshold()
        gc.set_threshold(young, middle, old)
