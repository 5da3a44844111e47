"""MUSS encode shards: a large job's sequences encoded by several workers, each shard over a range of documents."""


from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('alignment', '0022_mining_sequence_halfvec'),
    ]

    operations = [
        migrations.AddField(
            model_name='miningshard',
            name='document_first',
            field=models.BigIntegerField(blank=True, help_text='MUSS encode shards: the first document id it encodes.', null=True),
        ),
        migrations.AddField(
            model_name='miningshard',
            name='document_last',
            field=models.BigIntegerField(blank=True, help_text='MUSS encode shards: the last document id it encodes.', null=True),
        ),
        migrations.AlterField(
            model_name='miningshard',
            name='phase',
            field=models.CharField(choices=[('encode', 'Encode'), ('neighbours', 'Neighbours'), ('pairs', 'Pairs')], default='pairs', max_length=16),
        ),
    ]
