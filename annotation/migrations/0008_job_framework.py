"""The shared job base (alignment.jobs.models.Job): one status set, attempts, heartbeat and timestamps on every job row."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [('annotation', '0007_label_integrity')]

    operations = [
        migrations.AddField(model_name='exportjob', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AddField(model_name='exportjob', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AlterField(model_name='exportjob', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
        migrations.AddField(model_name='trainingjob', name='attempts', field=models.PositiveIntegerField(default=0, help_text='Times a worker started this job (a requeue after a crash counts).')),
        migrations.AddField(model_name='trainingjob', name='heartbeat_at', field=models.DateTimeField(blank=True, help_text='Last progress the worker reported.', null=True)),
        migrations.AlterField(model_name='trainingjob', name='status', field=models.CharField(choices=[('queued', 'Queued'), ('pending', 'pending (waiting for its next attempt)'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=16)),
    ]
