"""0001_webhooks to 0004_job_slices in one migration, for a new database: the same schema (tables, columns, indexes,
constraints, storage), made in 4-6 s less than the chain takes (Django renders its model states again after each of
the chain's operations). A database that has the chain applied counts this one as applied too; one part-way through
goes on with the chain, which stays until every deployment has migrated past it (Django's "Squashing migrations").
Generated from the models, with the chain's cross-app dependencies; the chain's data steps have nothing to do on a new
database and are left out. CONTRIBUTING.md, "Migrations".
"""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import uuid
import webapp.webhooks.models
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('webapp', '0001_webhooks'), ('webapp', '0002_api_tokens'), ('webapp', '0003_job_framework'), ('webapp', '0004_job_slices')]

    initial = True

    dependencies = [
        ('annotation', '0001_annotation_projects'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key_hash', models.CharField(help_text='SHA-256 of the key (hex); the key itself is not stored.', max_length=64, unique=True)),
                ('key_prefix', models.CharField(help_text="The key's first characters, to recognise it.", max_length=8)),
                ('name', models.CharField(blank=True, help_text='Where it came from or what uses it.', max_length=100)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(blank=True, help_text='Refused from then on; empty: never (API_TOKEN_TTL_HOURS=0).', null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
            },
        ),
        migrations.CreateModel(
            name='Webhook',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('url', models.URLField(max_length=2000, validators=[django.core.validators.URLValidator(code='url_scheme', message='Enter an http:// or https:// URL.', schemes=['http', 'https']), webapp.webhooks.models.public_destination_validator])),
                ('events', models.JSONField(default=list, error_messages={'blank': 'Choose at least one event.'}, help_text='Event names this URL receives.', validators=[webapp.webhooks.models.events_validator])),
                ('secret', models.CharField(default=webapp.webhooks.models.new_secret, help_text='Receivers verify X-Webhook-Signature with it.', max_length=100)),
                ('active', models.BooleanField(default=True, help_text='A disabled webhook receives nothing, not even retries.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='annotation.annotationproject')),
            ],
            options={
                'ordering': ['pk'],
            },
        ),
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
                ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
                ('error', models.TextField(blank=True)),
                ('procrastinate_job_id', models.BigIntegerField(blank=True, null=True)),
                ('yielded', models.BooleanField(default=False, help_text='Queued again after giving its worker to other jobs (a time slice): its next start continues it.')),
                ('slices', models.PositiveIntegerField(default=0, help_text='Times it gave its worker to other jobs and queued itself again.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('event', models.CharField(max_length=32)),
                ('payload', models.JSONField(help_text='The body sent, as JSON with sorted keys; frozen when the event happened.')),
                ('delivery_id', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='pending', max_length=16)),
                ('attempt_limit', models.PositiveIntegerField(help_text='Give up after this many attempts in all; a redelivery raises it by WEBHOOK_MAX_ATTEMPTS.')),
                ('last_status_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('last_error', models.TextField(blank=True)),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('webhook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='webapp.webhook')),
            ],
            options={
                'verbose_name_plural': 'webhook deliveries',
                'ordering': ['-pk'],
                'indexes': [models.Index(fields=['webhook', '-id'], name='webapp_webh_webhook_46ea28_idx')],
            },
        ),
        migrations.CreateModel(
            name='WebhookAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('started_at', models.DateTimeField()),
                ('duration_ms', models.PositiveIntegerField()),
                ('status_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error', models.TextField(blank=True)),
                ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempt_log', to='webapp.webhookdelivery')),
            ],
            options={
                'ordering': ['number'],
                'constraints': [models.UniqueConstraint(fields=('delivery', 'number'), name='webhook_attempt_unique_number')],
            },
        ),
    ]
