"""A MUSS job's sequence vectors in half precision (pgvector's ``halfvec``): on 46,356 OneStopEnglish sequences with
MiniLM the rounding left every one of the 10,905 pairs and 99.99 % of the exact neighbours as they were, and the
vectors take half the bytes (docs/benchmarks.md, "Sequence vectors in half precision").

A job's partial HNSW index (pgvector backend) was built on ``vector::vector(d)``; its search now asks for
``vector::halfvec(d)``, so the old indexes are dropped before the column changes type (PostgreSQL would otherwise
rebuild them as they were, for nothing), and built again, as halfvec, for the jobs not finished.
"""

import pgvector.django.halfvec
from django.db import migrations

_dropped: list[int] = []  # the jobs whose index the first step dropped, for the last step


def drop_old(apps, schema_editor):
    """Drop each job's HNSW index over ``vector::vector(d)``, remembering whose it was."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'alignment_miningsequence' AND indexname ~ '^mining_sequence_hnsw_[0-9]+$'"
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX "{name}"')
            _dropped.append(int(name.rsplit("_", 1)[1]))


def rebuild_unfinished(apps, schema_editor):
    """The dropped index of a job still queued or running, as its search now asks for it (finished jobs search no more)."""
    MiningJob = apps.get_model("alignment", "MiningJob")
    unfinished = MiningJob.objects.filter(pk__in=_dropped, status__in=["queued", "running"]).values_list("pk", flat=True)
    with schema_editor.connection.cursor() as cursor:
        for job_id in unfinished:
            cursor.execute("SELECT vector_dims(vector) FROM alignment_miningsequence WHERE job_id = %s LIMIT 1", [job_id])
            row = cursor.fetchone()
            if row is not None:
                cursor.execute(
                    f"CREATE INDEX IF NOT EXISTS mining_sequence_hnsw_{int(job_id)} ON alignment_miningsequence "
                    f"USING hnsw ((vector::halfvec({int(row[0])})) halfvec_cosine_ops) WHERE job_id = {int(job_id)}"
                )
    _dropped.clear()


class Migration(migrations.Migration):
    dependencies = [
        ("alignment", "0021_mining_index_parts"),
    ]

    operations = [
        migrations.RunPython(drop_old, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="miningsequence",
            name="vector",
            field=pgvector.django.halfvec.HalfVectorField(
                help_text="The sequence's unit vector in half precision: the same pairs as float32, half the bytes."
            ),
        ),
        migrations.RunPython(rebuild_unfinished, migrations.RunPython.noop),
    ]
