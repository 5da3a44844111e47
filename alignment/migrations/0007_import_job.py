"""Import jobs: uploads staged in the database (ImportJobFile) and imported by a worker (ImportJob)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alignment', '0006_job_framework'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ImportJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
                ('error', models.TextField(blank=True)),
                ('procrastinate_job_id', models.BigIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('corpus_name', models.CharField(max_length=200)),
                ('language', models.CharField(max_length=16)),
                ('pairing', models.CharField(max_length=16)),
                ('options', models.JSONField(help_text='ImportOptions fields: format, paragraph_mode, filename_pattern, drop_level_header, ...')),
                ('corpus_created', models.BooleanField(default=False, help_text='The corpus was created by this job.')),
                ('corpus_removed', models.BooleanField(default=False, help_text='The new corpus got no document and was removed again.')),
                ('files_total', models.PositiveIntegerField(default=0)),
                ('results', models.JSONField(default=list, help_text='One FileImportResult (as a dict) per file done, in upload order.')),
                ('pairs_created', models.PositiveIntegerField(default=0)),
                ('alignment_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.alignmentrun')),
                ('corpus', models.ForeignKey(blank=True, help_text='The corpus the files went into; empty until the job finds or creates it, or when a new one got nothing.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='import_jobs', to='alignment.corpus')),
                ('created_by', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('embedding_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.embeddingrun')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.CreateModel(
            name='ImportJobFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField(help_text='Position in the upload: files are imported in this order.')),
                ('name', models.CharField(max_length=500)),
                ('content', models.BinaryField()),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='staged_files', to='alignment.importjob')),
            ],
            options={
                'ordering': ['job', 'index'],
                'constraints': [models.UniqueConstraint(fields=('job', 'index'), name='one_staged_file_per_position')],
            },
        ),
    ]
