"""The shared job base (alignment.jobs.models.Job): one status set, attempts, heartbeat and timestamps on every job row."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [('webapp', '0002_api_tokens')]

    operations = [
        migrations.AddField(model_name='webhookdelivery', name='error', field=models.TextField(blank=True)),
        migrations.AddField(model_name='webhookdelivery', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AddField(model_name='webhookdelivery', name='procrastinate_job_id', field=models.BigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name='webhookdelivery', name='started_at', field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name='webhookdelivery', name='finished_at', field=models.DateTimeField(blank=True, null=True)),
        migrations.AlterField(model_name='webhookdelivery', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AlterField(model_name='webhookdelivery', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='pending', max_length=16)),
    ]
