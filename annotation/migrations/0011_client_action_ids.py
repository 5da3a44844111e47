"""The annotation screen's action ids: a resent label, undo or item event is answered, not stored twice.

Existing events get "" (no id); the unique constraints are partial, so only events with an id are indexed."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alignment', '0009_job_slices'),
        ('annotation', '0010_job_slices'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='itemevent',
            name='client_action_id',
            field=models.CharField(blank=True, default='', help_text="The annotation screen's id for the action that stored this event: its resend is answered, not stored again.", max_length=64),
        ),
        migrations.AddField(
            model_name='labelevent',
            name='client_action_id',
            field=models.CharField(blank=True, default='', help_text="The annotation screen's id for the action that stored this event: its resend is answered, not stored again.", max_length=64),
        ),
        migrations.AddConstraint(
            model_name='itemevent',
            constraint=models.UniqueConstraint(condition=models.Q(('client_action_id', ''), _negated=True), fields=('annotator', 'client_action_id'), name='item_event_one_per_client_action'),
        ),
        migrations.AddConstraint(
            model_name='labelevent',
            constraint=models.UniqueConstraint(condition=models.Q(('client_action_id', ''), _negated=True), fields=('annotator', 'client_action_id'), name='label_event_one_per_client_action'),
        ),
    ]
