from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from alignment.models import AlignmentRun
        from alignment.signals import run_succeeded

        run_succeeded.connect(_switch_suggestions, sender=AlignmentRun, dispatch_uid="annotation.switch_suggestions")


def _switch_suggestions(sender, run, **kwargs) -> None:
    """A re-alignment after a promotion or rollback becomes the waiting projects' suggestions."""
    from annotation.training.registry import suggestions_switch

    suggestions_switch(run)
