"""The shared job base (alignment.jobs.models.Job): one status set, attempts, heartbeat and timestamps on every job row."""

import django.utils.timezone
from django.db import migrations, models


def shards_done_to_succeeded(apps, schema_editor):
    apps.get_model("alignment", "MiningShard").objects.filter(status="done").update(status="succeeded")


def shards_succeeded_to_done(apps, schema_editor):
    apps.get_model("alignment", "MiningShard").objects.filter(status="succeeded").update(status="done")


class Migration(migrations.Migration):

    dependencies = [('alignment', '0005_mining_muss')]

    operations = [
        migrations.AddField(model_name='alignmentrun', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AddField(model_name='embeddingrun', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AddField(model_name='miningjob', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AddField(model_name='miningshard', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AddField(model_name='miningjob', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AddField(model_name='miningjob', name='procrastinate_job_id', field=models.BigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name='miningshard', name='created_at', field=models.DateTimeField(auto_now_add=True, default=django.utils.timezone.now), preserve_default=False),
        migrations.AddField(model_name='miningshard', name='started_at', field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name='miningshard', name='finished_at', field=models.DateTimeField(blank=True, null=True)),
        migrations.AlterField(model_name='alignmentrun', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AlterField(model_name='embeddingrun', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AlterField(model_name='miningshard', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AlterField(model_name='alignmentrun', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
        migrations.AlterField(model_name='embeddingrun', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
        migrations.AlterField(model_name='miningjob', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
        migrations.AlterField(model_name='miningshard', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
        migrations.RunPython(shards_done_to_succeeded, shards_succeeded_to_done),
    ]
