"""MUSS neighbours move from three columns of the wide sequence rows to a narrow table written by COPY: updating the
sequence rows (vector and text with them) made the neighbours phase cost more than the in-memory pipeline entire at
300,000 sequences (docs/benchmarks.md). Stored neighbours are carried over, and back."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models

_FORWARD = """
    INSERT INTO alignment_miningneighbours (sequence_id, ids, scores, knn_mean)
    SELECT id, neighbour_ids, coalesce(neighbour_scores, '{}'), coalesce(knn_mean, 0) FROM alignment_miningsequence
    WHERE neighbour_ids IS NOT NULL
"""
_BACKWARD = """
    UPDATE alignment_miningsequence AS s SET neighbour_ids = n.ids, neighbour_scores = n.scores, knn_mean = n.knn_mean
    FROM alignment_miningneighbours AS n WHERE n.sequence_id = s.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("alignment", "0019_mining_search_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="MiningNeighbours",
            fields=[
                (
                    "sequence",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="neighbour_row",
                        serialize=False,
                        to="alignment.miningsequence",
                    ),
                ),
                (
                    "ids",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.IntegerField(),
                        help_text="The k nearest sequences' indices, best first, self excluded.",
                        size=None,
                    ),
                ),
                (
                    "scores",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.FloatField(), help_text="Their scores, in the same order (the job's retrieval's).", size=None
                    ),
                ),
                ("knn_mean", models.FloatField(help_text="Mean score to the k neighbours (the margin's denominator).")),
            ],
        ),
        migrations.RunSQL(_FORWARD, _BACKWARD),
        migrations.RemoveField(
            model_name="miningsequence",
            name="knn_mean",
        ),
        migrations.RemoveField(
            model_name="miningsequence",
            name="neighbour_ids",
        ),
        migrations.RemoveField(
            model_name="miningsequence",
            name="neighbour_scores",
        ),
    ]
