"""0001_annotation_projects to 0019_segmentation_source in one migration, for a new database: the same schema (tables, columns, indexes,
constraints, storage), made in 4-6 s less than the chain takes (Django renders its model states again after each of
the chain's operations). A database that has the chain applied counts this one as applied too; one part-way through
goes on with the chain, which stays until every deployment has migrated past it (Django's "Squashing migrations").
Generated from the models, with the chain's cross-app dependencies; the chain's data steps have nothing to do on a new
database and are left out. CONTRIBUTING.md, "Migrations".
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('annotation', '0001_annotation_projects'), ('annotation', '0002_pair_verification'), ('annotation', '0003_quality_control'), ('annotation', '0004_paragraph_correction'), ('annotation', '0005_retraining'), ('annotation', '0006_export'), ('annotation', '0007_label_integrity'), ('annotation', '0008_job_framework'), ('annotation', '0009_item_events'), ('annotation', '0010_job_slices'), ('annotation', '0011_client_action_ids'), ('annotation', '0012_label_suggestion_provenance'), ('annotation', '0013_automatic_adaptation'), ('annotation', '0014_assignment_labelled_count'), ('annotation', '0015_label_event_indexes'), ('annotation', '0016_assignment_queue_counts'), ('annotation', '0017_exportjob_split_pairs'), ('annotation', '0018_bulk_accept'), ('annotation', '0019_segmentation_source')]

    initial = True

    dependencies = [
        ('alignment', '0016_embedding_shards'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AnnotationProject',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200, unique=True)),
                ('guidelines', models.TextField(blank=True, help_text='Shown to annotators; Markdown-free plain text with examples.')),
                ('overlap', models.PositiveSmallIntegerField(default=2, help_text='Annotators per item.')),
                ('strategy', models.CharField(choices=[('documents', 'whole document pairs'), ('queue', 'pair queue')], default='documents', max_length=16)),
                ('test_item_rate', models.FloatField(default=0.2, help_text='Share of gold test items mixed into queues (the paper: 1 in 5).')),
                ('accuracy_threshold', models.FloatField(default=0.85, help_text='Annotators below this accuracy on test items are flagged.')),
                ('adjudicate_all', models.BooleanField(default=False, help_text='Adjudicate every item, not only disagreements.')),
                ('bulk_precision_target', models.FloatField(default=0.97, help_text='Bulk accept offers the suggestions whose estimated precision meets this (annotation.labelling.bulk).')),
                ('exclude_flagged', models.BooleanField(default=True, help_text='Leave annotators flagged by quality control out of adjudication and agreement-based acceptance.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='annotation_projects', to='alignment.corpus')),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('pairs', models.ManyToManyField(related_name='annotation_projects', to='alignment.documentpair')),
                ('pending_suggestion_run', models.ForeignKey(blank=True, help_text='The re-alignment after a promotion; it becomes suggestion_run when it succeeds.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.alignmentrun')),
                ('suggestion_run', models.ForeignKey(blank=True, help_text='The alignment run whose candidates are shown as suggestions.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='annotation_projects', to='alignment.alignmentrun')),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='ExportJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
                ('error', models.TextField(blank=True)),
                ('procrastinate_job_id', models.BigIntegerField(blank=True, null=True)),
                ('yielded', models.BooleanField(default=False, help_text='Queued again after giving its worker to other jobs (a time slice): its next start continues it.')),
                ('slices', models.PositiveIntegerField(default=0, help_text='Times it gave its worker to other jobs and queued itself again.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('options', models.JSONField(help_text='Validated options: formats, include_majority, seed, fractions, simplification filters.')),
                ('pairs_total', models.PositiveIntegerField(default=0, help_text='Document pairs that may hold gold.')),
                ('pairs_done', models.PositiveIntegerField(default=0)),
                ('items_written', models.PositiveIntegerField(default=0, help_text='Labelled sentence pairs written so far.')),
                ('files', models.JSONField(default=list, help_text='[{"name": relative path, "bytes": n, "sha256": hex}, ...] once succeeded.')),
                ('split_pairs', models.JSONField(blank=True, default=dict, help_text='Document pairs per split once succeeded: {"train": n, ...}.')),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='export_jobs', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.CreateModel(
            name='GoldItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(choices=[('aligned', 'Aligned'), ('partial', 'Partial'), ('not_aligned', 'not aligned')], max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('complex_sentence', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='alignment.sentence')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gold_items', to='annotation.annotationproject')),
                ('simple_sentence', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='alignment.sentence')),
            ],
            options={
                'ordering': ['pk'],
                'constraints': [models.UniqueConstraint(fields=('project', 'simple_sentence', 'complex_sentence'), name='gold_item_unique')],
            },
        ),
        migrations.CreateModel(
            name='GoldAnswer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(blank=True, choices=[('aligned', 'Aligned'), ('partial', 'Partial'), ('not_aligned', 'not aligned'), ('', 'unlabelled')], max_length=16)),
                ('seconds_spent', models.FloatField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='gold_answers', to=settings.AUTH_USER_MODEL)),
                ('gold_item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='annotation.golditem')),
            ],
            options={
                'ordering': ['pk'],
                'constraints': [models.CheckConstraint(condition=models.Q(('seconds_spent__isnull', True), models.Q(('seconds_spent__gte', 0), ('seconds_spent__lte', 86400)), _connector='OR'), name='gold_answer_seconds_spent_sane')],
            },
        ),
        migrations.CreateModel(
            name='ItemEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('skip', 'Skip'), ('flag', 'Flag'), ('unflag', 'flag removed'), ('comment', 'Comment'), ('undo', 'skip undone')], max_length=16)),
                ('text', models.CharField(blank=True, help_text='The comment of a comment event.', max_length=2000)),
                ('client_action_id', models.CharField(blank=True, default='', help_text="The annotation screen's id for the action that stored this event: its resend is answered, not stored again.", max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='item_events', to=settings.AUTH_USER_MODEL)),
                ('complex_sentence', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='alignment.sentence')),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='item_events', to='alignment.documentpair')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='item_events', to='annotation.annotationproject')),
                ('simple_sentence', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='alignment.sentence')),
                ('undoes', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='undone_by', to='annotation.itemevent')),
            ],
            options={
                'ordering': ['pk'],
                'indexes': [models.Index(fields=['project', 'annotator', 'pair'], name='annotation__project_fc02d8_idx')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('client_action_id', ''), _negated=True), fields=('annotator', 'client_action_id'), name='item_event_one_per_client_action')],
            },
        ),
        migrations.CreateModel(
            name='LabelEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('old_label', models.CharField(blank=True, choices=[('aligned', 'Aligned'), ('partial', 'Partial'), ('not_aligned', 'not aligned'), ('', 'unlabelled')], max_length=16)),
                ('new_label', models.CharField(blank=True, choices=[('aligned', 'Aligned'), ('partial', 'Partial'), ('not_aligned', 'not aligned'), ('', 'unlabelled')], max_length=16)),
                ('source', models.CharField(choices=[('human', 'Human'), ('suggestion', 'suggestion accepted'), ('bulk', 'bulk accepted'), ('adjudication', 'Adjudication'), ('import', 'Import'), ('undo', 'Undo'), ('segmentation', 'sentence edit')], default='human', max_length=16)),
                ('seconds_spent', models.FloatField(blank=True, help_text='Time on the item before this action, from the client.', null=True)),
                ('client_action_id', models.CharField(blank=True, default='', help_text="The annotation screen's id for the action that stored this event: its resend is answered, not stored again.", max_length=64)),
                ('suggestion', models.JSONField(blank=True, default=dict, help_text='What was suggesting: {"run_id", "model", "model_version", "kind", "basis"}; {} for imports.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='label_events', to=settings.AUTH_USER_MODEL)),
                ('complex_sentence', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='label_events_as_complex', to='alignment.sentence')),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='label_events', to='alignment.documentpair')),
                ('previous', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='next_event', to='annotation.labelevent')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='label_events', to='annotation.annotationproject')),
                ('simple_sentence', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='label_events_as_simple', to='alignment.sentence')),
                ('suggestion_run', models.ForeignKey(blank=True, help_text='The run whose suggestions were shown when the label was made (annotation.provenance).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.alignmentrun')),
                ('undoes', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='undone_by', to='annotation.labelevent')),
            ],
            options={
                'ordering': ['pk'],
                'indexes': [models.Index(fields=['project', 'annotator', 'pair'], name='annotation__project_d268bc_idx'), models.Index(fields=['project', 'pair', 'simple_sentence', 'complex_sentence'], name='annotation__project_3bbe6e_idx'), models.Index(fields=['project', 'id'], name='label_event_project_latest'), models.Index(condition=models.Q(('source', 'adjudication')), fields=['project', 'pair'], name='label_event_adjudications'), models.Index(condition=models.Q(('source', 'bulk')), fields=['project', 'pair'], name='label_event_bulk')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('client_action_id', ''), _negated=True), fields=('annotator', 'client_action_id'), name='label_event_one_per_client_action'), models.UniqueConstraint(condition=models.Q(('previous__isnull', True), models.Q(('source', 'adjudication'), _negated=True)), fields=('project', 'annotator', 'simple_sentence', 'complex_sentence'), name='label_event_one_first_per_annotator_item'), models.UniqueConstraint(condition=models.Q(('previous__isnull', True), ('source', 'adjudication')), fields=('project', 'simple_sentence', 'complex_sentence'), name='label_event_one_first_adjudication_per_item'), models.CheckConstraint(condition=models.Q(('seconds_spent__isnull', True), models.Q(('seconds_spent__gte', 0), ('seconds_spent__lte', 86400)), _connector='OR'), name='label_event_seconds_spent_sane')],
            },
        ),
        migrations.CreateModel(
            name='ModelVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField(help_text='v1, v2, ... within the project.')),
                ('config', models.JSONField(help_text="The aligner's config as saved with the model.")),
                ('training', models.JSONField(default=dict, help_text='Optimisation settings, seed, base version, epochs run, best epoch.')),
                ('path', models.CharField(help_text='Model directory under MODEL_DIR.', max_length=500)),
                ('checksum', models.CharField(help_text="SHA-256 of the directory's checksums.json, checked when loading.", max_length=64)),
                ('metrics', models.JSONField(help_text='{"dev": report, "test": report}: Task 1 / Task 2, sentence-pair and group P/R/F1.')),
                ('baseline', models.JSONField(default=dict, help_text='What it was compared with on the same test documents: {"version": id | null, "name": ..., "test": report}.')),
                ('automatic', models.BooleanField(default=False, help_text='Adapted by the background job a finished pair queues, not trained by hand.')),
                ('automatic_reason', models.TextField(blank=True, help_text='Why the automatic adaptation kept this fine-tuned copy.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='model_versions', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['-number'],
                'constraints': [models.UniqueConstraint(fields=('project', 'number'), name='one_number_per_project_version')],
            },
        ),
        migrations.CreateModel(
            name='ModelActivation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('action', models.CharField(choices=[('promote', 'Promote'), ('force', 'forced promotion'), ('rollback', 'Rollback'), ('automatic', 'automatic adaptation')], max_length=16)),
                ('reason', models.TextField(blank=True)),
                ('comparison', models.JSONField(default=dict, help_text="Both versions' test figures on the same documents at that moment.")),
                ('at', models.DateTimeField(auto_now_add=True)),
                ('alignment_run', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.alignmentrun')),
                ('by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='model_activations', to='annotation.annotationproject')),
                ('previous', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.modelversion')),
                ('version', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='activations', to='annotation.modelversion')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.AddField(
            model_name='annotationproject',
            name='active_model',
            field=models.ForeignKey(blank=True, help_text='The trained aligner whose suggestions annotators see; empty: the untrained aligner.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='annotation.modelversion'),
        ),
        migrations.CreateModel(
            name='AdaptationJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
                ('error', models.TextField(blank=True)),
                ('procrastinate_job_id', models.BigIntegerField(blank=True, null=True)),
                ('yielded', models.BooleanField(default=False, help_text='Queued again after giving its worker to other jobs (a time slice): its next start continues it.')),
                ('slices', models.PositiveIntegerField(default=0, help_text='Times it gave its worker to other jobs and queued itself again.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('outcome', models.CharField(blank=True, choices=[('adapted', 'adapted: a new version is active'), ('kept', 'kept the current model'), ('not_adapted', 'not adapted')], max_length=16)),
                ('reason', models.TextField(blank=True, help_text='One sentence for the Models page: what was kept and why, or why nothing was tried.')),
                ('figures', models.JSONField(default=dict, help_text="Each candidate's held-out (group F1, pair F1), as AdaptReport.figures.")),
                ('stage', models.CharField(blank=True, max_length=200)),
                ('after_pair', models.ForeignKey(help_text='The finished pair that queued it last.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.documentpair')),
                ('alignment_run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='alignment.alignmentrun')),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='adaptation_jobs', to='annotation.annotationproject')),
                ('version', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='adaptation_job', to='annotation.modelversion')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.CreateModel(
            name='PairVerification',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('verified', models.BooleanField()),
                ('note', models.CharField(blank=True, max_length=500)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='verifications', to='alignment.documentpair')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='verifications', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['pk'],
                'indexes': [models.Index(fields=['project', 'pair'], name='annotation__project_b3ad8d_idx')],
            },
        ),
        migrations.CreateModel(
            name='ParagraphCorrection',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('groups', models.JSONField(default=list)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='paragraph_corrections', to=settings.AUTH_USER_MODEL)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='paragraph_corrections', to='alignment.documentpair')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='paragraph_corrections', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['pk'],
                'indexes': [models.Index(fields=['project', 'pair', 'annotator'], name='annotation__project_d0a63c_idx')],
            },
        ),
        migrations.CreateModel(
            name='ProjectMembership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('manager', 'Manager'), ('annotator', 'Annotator'), ('viewer', 'Viewer')], max_length=16)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='annotation.annotationproject')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='project_memberships', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('project', 'user'), name='membership_unique_per_project')],
            },
        ),
        migrations.CreateModel(
            name='TrainingSnapshot',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seed', models.IntegerField(default=0, help_text="Seeds the document-level split of pairs new to this project's snapshots.")),
                ('splits', models.JSONField(help_text='{"<document pair id>": "train" | "dev" | "test"}')),
                ('items', models.JSONField(help_text='[[pair id, simple sentence id, complex sentence id, label], ...]: the labels trained on.')),
                ('label_event_ids', models.JSONField(help_text="The label events the items' labels come from.")),
                ('counts', models.JSONField(help_text='{"labels": {label: n}, "pairs": {split: n}, "labels_by_split": {split: {label: n}}}')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='training_snapshots', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.CreateModel(
            name='TrainingJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
                ('error', models.TextField(blank=True)),
                ('procrastinate_job_id', models.BigIntegerField(blank=True, null=True)),
                ('yielded', models.BooleanField(default=False, help_text='Queued again after giving its worker to other jobs (a time slice): its next start continues it.')),
                ('slices', models.PositiveIntegerField(default=0, help_text='Times it gave its worker to other jobs and queued itself again.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('config', models.JSONField(help_text='{"epochs", "lr", "patience", "seed"}')),
                ('cancel_requested', models.BooleanField(default=False)),
                ('stage', models.CharField(blank=True, help_text='What the job is doing now.', max_length=200)),
                ('progress', models.JSONField(default=list, help_text='One entry per epoch: epoch, log-likelihood, dev F1.')),
                ('base_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='annotation.modelversion')),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='training_jobs', to='annotation.annotationproject')),
                ('version', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='job', to='annotation.modelversion')),
                ('snapshot', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='jobs', to='annotation.trainingsnapshot')),
            ],
            options={
                'ordering': ['-pk'],
            },
        ),
        migrations.AddField(
            model_name='modelversion',
            name='snapshot',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='versions', to='annotation.trainingsnapshot'),
        ),
        migrations.CreateModel(
            name='Assignment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('labelled', models.PositiveIntegerField(default=0, help_text='Simple sentences of the pair with a current label of the annotator.')),
                ('labelled_ever', models.PositiveIntegerField(default=0, help_text='Sentence pairs the annotator ever labelled, an undone label too.')),
                ('queue_run_id', models.IntegerField(blank=True, help_text='The suggestion run the queue figures below were counted for.', null=True)),
                ('queue_open', models.PositiveIntegerField(default=0, help_text='Suggestions of the pair the annotator has not labelled or skipped.')),
                ('queue_uncertainty', models.FloatField(blank=True, help_text='The least |CRF marginal - 0.5| among them.', null=True)),
                ('queue_uncertainty_first', models.IntegerField(blank=True, help_text="The first of them in the queue's uncertainty order.", null=True)),
                ('queue_disagreement', models.FloatField(blank=True, help_text='The largest disagreement of the measures among them.', null=True)),
                ('queue_disagreement_first', models.IntegerField(blank=True, help_text='The first of them in the disagreement order.', null=True)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to=settings.AUTH_USER_MODEL)),
                ('pair', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='alignment.documentpair')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['project', 'pair', 'annotator'],
                'indexes': [models.Index(models.F('project'), models.F('annotator'), models.F('queue_uncertainty'), models.F('queue_uncertainty_first'), condition=models.Q(('queue_open__gt', 0)), name='assignment_queue_uncertainty'), models.Index(models.F('project'), models.F('annotator'), models.OrderBy(models.F('queue_disagreement'), descending=True), models.F('queue_disagreement_first'), condition=models.Q(('queue_open__gt', 0)), name='assignment_queue_disagreement')],
                'constraints': [models.UniqueConstraint(fields=('project', 'pair', 'annotator'), name='assignment_unique')],
            },
        ),
    ]
