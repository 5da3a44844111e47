from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from alignment.human_labels import human_labels_provider_set
        from alignment.models import AlignmentRun
        from alignment.signals import run_succeeded
        from annotation.gold_overlay import pair_human_labels

        run_succeeded.connect(_switch_suggestions, sender=AlignmentRun, dispatch_uid="annotation.switch_suggestions")
        human_labels_provider_set(pair_human_labels)  # the inspection page's overlay (alignment may not import annotation)


def _switch_suggestions(sender, run, **kwargs) -> None:
    """A re-alignment after a promotion or rollback becomes the waiting projects' suggestions; a re-decoding after a
    sentence edit gives its rows to the suggestion runs it decoded for."""
    from annotation.labelling.segmentation import redecoded_store
    from annotation.training.registry import suggestions_switch

    suggestions_switch(run)
    redecoded_store(run)
