"""Label integrity: one first event per label chain, and only sane times on items.

Before the constraints can be added, the rows that break them are repaired:

* **Times.** ``seconds_spent`` of label events and gold answers that is NaN, infinite or
  negative becomes NULL (not measured): it was never a time, and NaN made every label
  listing fail. A finite time above 24 h becomes 24 h, the most the app now stores.

* **Duplicate first events.** Two simultaneous first labels could both be stored, each
  with an empty ``previous``, so a chain (an annotator's events on one sentence pair, or
  the adjudications of one sentence pair) could have two or more first events, each
  perhaps followed by later events. Repair keeps every event: nothing a person did is
  dropped, and the current label (the newest event) does not change. The chain is
  re-threaded in the order the events were stored (by id): the earliest first event
  stays first, and every later event names the one stored just before it as its
  ``previous``, with ``old_label`` set to that event's ``new_label`` (the invariant the
  services keep, which undo relies on). Chains with a single first event are untouched.
"""

from __future__ import annotations

from django.db import migrations, models

SECONDS_SPENT_MAX = 24 * 60 * 60
ADJUDICATION = "adjudication"


def seconds_spent_repair(apps, schema_editor) -> None:
    """NaN, ±infinity and negative times -> NULL; finite times above 24 h -> 24 h."""
    for name in ("LabelEvent", "GoldAnswer"):
        table = apps.get_model("annotation", name)._meta.db_table
        schema_editor.execute(
            f"UPDATE {table} SET seconds_spent = NULL "
            "WHERE seconds_spent = 'NaN'::float8 OR seconds_spent IN ('Infinity'::float8, '-Infinity'::float8) OR seconds_spent < 0"
        )
        schema_editor.execute(f"UPDATE {table} SET seconds_spent = %s WHERE seconds_spent > %s", [SECONDS_SPENT_MAX, SECONDS_SPENT_MAX])


def label_chains_repair(apps, schema_editor) -> None:
    """Re-thread every chain that has more than one first event (see the module docstring)."""
    LabelEvent = apps.get_model("annotation", "LabelEvent")
    firsts = LabelEvent.objects.filter(previous__isnull=True)
    chains = [
        (firsts.exclude(source=ADJUDICATION), LabelEvent.objects.exclude(source=ADJUDICATION),
         ("project_id", "annotator_id", "simple_sentence_id", "complex_sentence_id")),
        (firsts.filter(source=ADJUDICATION), LabelEvent.objects.filter(source=ADJUDICATION),
         ("project_id", "simple_sentence_id", "complex_sentence_id")),
    ]  # fmt: skip
    for first_events, stream, key in chains:
        broken = first_events.values(*key).annotate(firsts=models.Count("id")).filter(firsts__gt=1).order_by(*key)
        for chain_key in broken:
            chain_key.pop("firsts")
            _rethread(LabelEvent, stream.filter(**chain_key))
    # The updates leave deferred foreign-key checks pending; run them now, or adding the constraints fails.
    schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _rethread(LabelEvent, chain) -> None:
    rows = list(chain.order_by("pk").values_list("pk", "new_label"))
    chain.update(previous=None)  # free every one-to-one slot before pointing events at new predecessors
    for (pk, _label), (previous_pk, previous_label) in zip(rows[1:], rows):
        LabelEvent.objects.filter(pk=pk).update(previous_id=previous_pk, old_label=previous_label)


SECONDS_SPENT_SANE = models.Q(seconds_spent__isnull=True) | models.Q(seconds_spent__gte=0, seconds_spent__lte=SECONDS_SPENT_MAX)


class Migration(migrations.Migration):

    dependencies = [('annotation', '0006_export')]

    operations = [
        migrations.RunPython(seconds_spent_repair, migrations.RunPython.noop),
        migrations.RunPython(label_chains_repair, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='labelevent',
            constraint=models.UniqueConstraint(
                condition=models.Q(previous__isnull=True) & ~models.Q(source=ADJUDICATION),
                fields=('project', 'annotator', 'simple_sentence', 'complex_sentence'),
                name='label_event_one_first_per_annotator_item',
            ),
        ),
        migrations.AddConstraint(
            model_name='labelevent',
            constraint=models.UniqueConstraint(
                condition=models.Q(previous__isnull=True, source=ADJUDICATION),
                fields=('project', 'simple_sentence', 'complex_sentence'),
                name='label_event_one_first_adjudication_per_item',
            ),
        ),
        migrations.AddConstraint(
            model_name='labelevent',
            constraint=models.CheckConstraint(condition=SECONDS_SPENT_SANE, name='label_event_seconds_spent_sane'),
        ),
        migrations.AddConstraint(
            model_name='goldanswer',
            constraint=models.CheckConstraint(condition=SECONDS_SPENT_SANE, name='gold_answer_seconds_spent_sane'),
        ),
    ]
