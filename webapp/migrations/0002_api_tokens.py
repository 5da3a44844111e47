"""API tokens of our own (hashed, expiring, revocable) replace DRF's authtoken; delivery logs keep no response body.

Existing DRF tokens keep working: each is copied as its SHA-256 hash (valid for
API_TOKEN_TTL_HOURS from now), and the plain-text keys are then deleted from
``authtoken_token`` (the table is left to its own app's migrations). The webhook URL
gains the public-address validator; the receivers' answers are no longer stored.
"""

import hashlib
from datetime import timedelta

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

import webapp.webhooks.models

DRF_TOKEN_TABLE = "authtoken_token"


def drf_tokens_copy(apps, schema_editor):
    connection = schema_editor.connection
    if DRF_TOKEN_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("webapp", "ApiToken")
    ttl_hours = getattr(settings, "API_TOKEN_TTL_HOURS", 720)
    expires_at = timezone.now() + timedelta(hours=ttl_hours) if ttl_hours else None
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "key", "user_id", "created" FROM "{DRF_TOKEN_TABLE}"')
        rows = cursor.fetchall()
        ApiToken.objects.bulk_create(
            ApiToken(
                user_id=user_id, key_hash=hashlib.sha256(key.encode()).hexdigest(), key_prefix=key[:8],
                name="migrated from the old token", created_at=created, expires_at=expires_at,
            )  # fmt: skip
            for key, user_id, created in rows
        )
        cursor.execute(f'DELETE FROM "{DRF_TOKEN_TABLE}"')  # no plain-text credentials left behind


class Migration(migrations.Migration):

    dependencies = [
        ('webapp', '0001_webhooks'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveField(
            model_name='webhookdelivery',
            name='last_response',
        ),
        migrations.AlterField(
            model_name='webhook',
            name='url',
            field=models.URLField(max_length=2000, validators=[django.core.validators.URLValidator(code='url_scheme', message='Enter an http:// or https:// URL.', schemes=['http', 'https']), webapp.webhooks.models.public_destination_validator]),
        ),
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
        migrations.RunPython(drf_tokens_copy, migrations.RunPython.noop),
    ]
