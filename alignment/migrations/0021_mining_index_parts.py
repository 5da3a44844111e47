"""A MUSS job's faiss HNSW index kept in PostgreSQL, built once by the prepare for every worker; its parts are
stored uncompressed (faiss's float32 vectors do not compress, and pglz would spend a worker's time trying)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("alignment", "0020_mining_neighbours_table"),
    ]

    operations = [
        migrations.AlterField(
            model_name="miningjob",
            name="search_index",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="MUSS: the IVF index's settings (cells, nprobe, PCA, sample), or the stored HNSW index's (kind, M, size).",
            ),
        ),
        migrations.CreateModel(
            name="MiningIndexPart",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("part", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                (
                    "job",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="index_parts", to="alignment.miningjob"),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("job", "part"), name="one_index_part_per_number")],
            },
        ),
        migrations.RunSQL("ALTER TABLE alignment_miningindexpart ALTER COLUMN data SET STORAGE EXTERNAL", migrations.RunSQL.noop),
    ]
