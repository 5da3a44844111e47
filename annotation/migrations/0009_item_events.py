"""Item events: an annotator's skip, flag and comment on a document pair (or a queue item), append-only like labels."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alignment', '0006_job_framework'),
        ('annotation', '0008_job_framework'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ItemEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('skip', 'Skip'), ('flag', 'Flag'), ('unflag', 'flag removed'), ('comment', 'Comment'), ('undo', 'skip undone')], max_length=16)),
                ('text', models.CharField(blank=True, help_text='The comment of a comment event.', max_length=2000)),
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
            },
        ),
    ]
