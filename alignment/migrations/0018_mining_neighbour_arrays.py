"""MUSS sequences keep their neighbours as two arrays (indices, scores) instead of a jsonb list of pairs: the pairs phase
read them back for every neighbour of every sequence, and decoding the JSON was a quarter of it (bench/mining_scale.py).
Stored neighbours are carried over in order."""

import django.contrib.postgres.fields
from django.db import migrations, models

_FORWARD = """
    UPDATE alignment_miningsequence SET
      neighbour_ids = ARRAY(SELECT (e->>0)::int FROM jsonb_array_elements(neighbours) WITH ORDINALITY AS x(e, n) ORDER BY n),
      neighbour_scores = ARRAY(SELECT (e->>1)::float8 FROM jsonb_array_elements(neighbours) WITH ORDINALITY AS x(e, n) ORDER BY n)
    WHERE neighbours IS NOT NULL
"""
_BACKWARD = """
    UPDATE alignment_miningsequence SET neighbours = (
      SELECT coalesce(jsonb_agg(jsonb_build_array(i, s) ORDER BY n), '[]'::jsonb)
      FROM unnest(neighbour_ids, neighbour_scores) WITH ORDINALITY AS x(i, s, n))
    WHERE neighbour_ids IS NOT NULL
"""


class Migration(migrations.Migration):
    dependencies = [
        ("alignment", "0017_segment_edits"),
    ]

    operations = [
        migrations.AddField(
            model_name="miningsequence",
            name="neighbour_ids",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.IntegerField(), help_text="The k nearest sequences' indices, best first, self excluded.", null=True, size=None
            ),
        ),
        migrations.AddField(
            model_name="miningsequence",
            name="neighbour_scores",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.FloatField(), help_text="Their scores, in the same order (the job's retrieval's).", null=True, size=None
            ),
        ),
        migrations.RunSQL(_FORWARD, _BACKWARD),
        migrations.RemoveField(model_name="miningsequence", name="neighbours"),
    ]
