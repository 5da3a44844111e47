"""Each label records which suggestion run (and model) was suggesting when it was made (annotation.provenance).

Events made before this migration get a backfilled guess, marked ``"basis": "backfilled"``: the
project's suggestion run at the time, judged from the runs the project is known to have switched
to (its current suggestion run and every promotion's or rollback's re-alignment) by when each
finished. An event older than all of them gets ``"kind": "unknown"``; one on a pair the run never
aligned gets ``"kind": "none"``. Adjudications and imports record nothing. Reversing drops the fields.
"""

import django.db.models.deletion
from django.db import migrations, models

SCREEN_SOURCES = ("human", "suggestion", "undo")


def backfill(apps, schema_editor):
    """Each project's timeline of suggestion runs, one UPDATE per run and kind (never one per event)."""
    project_model = apps.get_model("annotation", "AnnotationProject")
    label_event = apps.get_model("annotation", "LabelEvent")
    activation = apps.get_model("annotation", "ModelActivation")
    alignment_run = apps.get_model("alignment", "AlignmentRun")
    aligned_pair = apps.get_model("alignment", "AlignedPair")
    for project in project_model.objects.all():
        events = label_event.objects.filter(project=project, source__in=SCREEN_SOURCES)
        if not events.exists():
            continue
        run_ids = set(activation.objects.filter(project=project).exclude(alignment_run=None).values_list("alignment_run_id", flat=True))
        if project.suggestion_run_id is not None:
            run_ids.add(project.suggestion_run_id)
        runs = alignment_run.objects.filter(pk__in=run_ids, status="succeeded", finished_at__isnull=False).order_by("finished_at", "pk")
        timeline = list(runs)
        first = timeline[0].finished_at if timeline else None
        before = events.filter(created_at__lt=first) if first is not None else events
        before.update(suggestion={"run_id": None, "model": None, "model_version": None, "kind": "unknown", "basis": "backfilled"})
        for position, run in enumerate(timeline):
            chunk = events.filter(created_at__gte=run.finished_at)
            if position + 1 < len(timeline):
                chunk = chunk.filter(created_at__lt=timeline[position + 1].finished_at)
            aligned = aligned_pair.objects.filter(run=run).values_list("pair_id", flat=True)
            guess = {"run_id": run.pk, "model": None, "model_version": run.model_version, "basis": "backfilled"}
            chunk.filter(pair_id__in=aligned).update(suggestion_run=run, suggestion={**guess, "kind": "stored"})
            chunk.exclude(pair_id__in=aligned).update(suggestion={**guess, "kind": "none"})


class Migration(migrations.Migration):
    dependencies = [
        ("alignment", "0010_import_direction"),
        ("annotation", "0011_client_action_ids"),
    ]

    operations = [
        migrations.AddField(
            model_name="labelevent",
            name="suggestion",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='What was suggesting: {"run_id", "model", "model_version", "kind", "basis"}; {} for imports.',
            ),
        ),
        migrations.AddField(
            model_name="labelevent",
            name="suggestion_run",
            field=models.ForeignKey(
                blank=True,
                help_text="The run whose suggestions were shown when the label was made (annotation.provenance).",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="alignment.alignmentrun",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
