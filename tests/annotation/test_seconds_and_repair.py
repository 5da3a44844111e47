"""Time on an item (``seconds_spent``) is a finite, non-negative number; migration 0007 repairs rows stored before.

A NaN once stored made every ``GET /api/projects/<id>/labels/`` answer 500. The repair
tests put such rows back with raw SQL (after dropping the constraint inside the test's
transaction, which rolls the drop back) and run the migration's own repair functions.
"""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.labelling import queue
from annotation.models import GoldAnswer, GoldItem, LabelEvent
from tests.annotation.conftest import tram_project

repair = importlib.import_module("annotation.migrations.0007_label_integrity")
BAD_SECONDS = ["nan", "NaN", "inf", "-Infinity", "-1", "abc", "1e18", "86400.5"]


@pytest.fixture
def labelling(tram_corpus, owner, annotator):
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Times")
    return project, pair, annotator, simple, complex_


def _record(labelling, index: int, label: str = "aligned", expected=None, seconds=None) -> LabelEvent:
    project, pair, annotator, simple, complex_ = labelling
    return services.label_record(project=project, annotator=annotator, pair=pair, simple_sentence_id=simple[index],
                                 complex_sentence_id=complex_[index], label=label, expected_previous=expected,
                                 seconds_spent=seconds)  # fmt: skip


def _labels_api(project, user):
    client = APIClient(raise_request_exception=False)  # a server error comes back as a 500, as a browser sees it
    client.force_authenticate(user)
    return client.get(f"/api/projects/{project.pk}/labels/")


@pytest.mark.parametrize("seconds", BAD_SECONDS)
def test_the_screen_refuses_a_time_that_is_not_a_finite_non_negative_number(client, labelling, seconds):
    project, pair, annotator, simple, complex_ = labelling
    client.force_login(annotator)
    url = reverse("annotation:label_save", kwargs={"project_id": project.pk, "pair_id": pair.pk})
    response = client.post(url, {"simple_sentence_id": simple[0], "complex_sentence_id": complex_[0], "label": "aligned",
                                 "expected_previous": "", "seconds_spent": seconds})  # fmt: skip
    assert response.status_code == 400 and "seconds_spent" in response.json()["error"]
    assert not LabelEvent.objects.exists()
    assert _labels_api(project, annotator).status_code == 200


@pytest.mark.parametrize("seconds", ["NaN", "Infinity", -1, "abc"])
def test_the_api_refuses_a_time_that_is_not_a_finite_non_negative_number(labelling, seconds):
    project, pair, annotator, simple, complex_ = labelling
    client = APIClient()
    client.force_authenticate(annotator)
    body = {"pair": pair.pk, "simple_sentence": simple[0], "complex_sentence": complex_[0], "label": "aligned", "seconds_spent": seconds}
    response = client.post(f"/api/projects/{project.pk}/labels/", body, format="json")
    assert response.status_code == 400 and "seconds_spent" in response.json()
    assert not LabelEvent.objects.exists()


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -0.5])
def test_every_writer_of_times_refuses_non_finite_and_negative_values(labelling, seconds):
    project, pair, annotator, simple, complex_ = labelling
    with pytest.raises(ValueError, match="seconds_spent"):
        _record(labelling, 0, seconds=seconds)
    gold = GoldItem.objects.create(project=project, simple_sentence_id=simple[1], complex_sentence_id=complex_[1], label="aligned")
    with pytest.raises(ValueError, match="seconds_spent"):
        queue.queue_answer(project=project, annotator=annotator, kind="gold", item_id=gold.pk, label="aligned", seconds_spent=seconds)
    assert not LabelEvent.objects.exists() and not GoldAnswer.objects.exists()


def test_a_time_above_a_day_is_refused_and_a_day_is_stored(labelling):
    """Before: 1e18 was stored as 86,400 s and then dominated the project's time figures."""
    with pytest.raises(ValueError, match=r"seconds_spent: 1e\+18 is more than 86400 seconds \(24 hours\) on one item"):
        _record(labelling, 0, seconds=1e18)
    assert not LabelEvent.objects.exists()
    assert _record(labelling, 0, seconds=86400.0).seconds_spent == services.SECONDS_SPENT_MAX == 86400


def test_the_queue_page_refuses_nan_and_names_the_field(client, labelling):
    project, pair, annotator, simple, complex_ = labelling
    gold = GoldItem.objects.create(project=project, simple_sentence_id=simple[1], complex_sentence_id=complex_[1], label="aligned")
    client.force_login(annotator)
    response = client.post(reverse("annotation:project_queue", args=[project.pk]),
                           {"kind": "gold", "item_id": gold.pk, "label": "aligned", "seconds_spent": "NaN"}, follow=True)  # fmt: skip
    assert "Not saved: seconds_spent" in response.content.decode()
    assert not GoldAnswer.objects.exists()
    assert _labels_api(project, annotator).status_code == 200


def test_the_database_refuses_nan_infinity_and_negative_times(labelling):
    event = _record(labelling, 0, seconds=2.0)
    for value in ("NaN", "Infinity", "-1"):
        with pytest.raises(IntegrityError, match="label_event_seconds_spent_sane"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {LabelEvent._meta.db_table} SET seconds_spent = %s::float8 WHERE id = %s", [value, event.pk])


def _constraint(model, name: str):
    return next(constraint for constraint in model._meta.constraints if constraint.name == name)


def _without_constraints(*constraints: tuple[type, str]) -> None:
    """Drop constraints inside the test's transaction (rolled back with it), to store rows as older versions did."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # run the rows' pending foreign-key checks; ALTER TABLE needs none pending
    with connection.schema_editor() as editor:
        for model, name in constraints:
            editor.remove_constraint(model, _constraint(model, name))


def test_repair_turns_stored_nan_infinity_and_negative_times_into_null(labelling):
    project, pair, annotator, simple, complex_ = labelling
    events = [_record(labelling, index) for index in range(5)]
    gold = GoldItem.objects.create(project=project, simple_sentence_id=simple[0], complex_sentence_id=complex_[0], label="aligned")
    answer = GoldAnswer.objects.create(gold_item=gold, annotator=annotator, label="aligned")
    label_table, answer_table = LabelEvent._meta.db_table, GoldAnswer._meta.db_table
    _without_constraints((LabelEvent, "label_event_seconds_spent_sane"), (GoldAnswer, "gold_answer_seconds_spent_sane"))
    stored = ["NaN", "Infinity", "-3", "1000000", "12.5"]
    with connection.cursor() as cursor:
        for event, value in zip(events, stored):
            cursor.execute(f"UPDATE {label_table} SET seconds_spent = %s::float8 WHERE id = %s", [value, event.pk])
        cursor.execute(f"UPDATE {answer_table} SET seconds_spent = 'NaN'::float8 WHERE id = %s", [answer.pk])
    assert _labels_api(project, annotator).status_code == 500  # the failure this repairs: NaN is not JSON

    with connection.schema_editor() as editor:
        repair.seconds_spent_repair(apps, editor)
        editor.add_constraint(LabelEvent, _constraint(LabelEvent, "label_event_seconds_spent_sane"))  # as the migration does next
        editor.add_constraint(GoldAnswer, _constraint(GoldAnswer, "gold_answer_seconds_spent_sane"))

    after = dict(LabelEvent.objects.values_list("pk", "seconds_spent"))
    assert [after[event.pk] for event in events] == [None, None, None, 86400.0, 12.5]
    assert GoldAnswer.objects.get(pk=answer.pk).seconds_spent is None
    assert _labels_api(project, annotator).status_code == 200


def test_repair_rethreads_an_item_with_two_first_events_keeping_every_event(labelling):
    project, pair, annotator, simple, complex_ = labelling
    _without_constraints((LabelEvent, "label_event_one_first_per_annotator_item"))
    item = {"project": project, "pair": pair, "annotator": annotator, "simple_sentence_id": simple[0], "complex_sentence_id": complex_[0]}
    first = LabelEvent.objects.create(**item, new_label="aligned")
    twin = LabelEvent.objects.create(**item, new_label="partial")  # the double submit that was also accepted
    after_first = LabelEvent.objects.create(**item, old_label="aligned", new_label="not_aligned", previous=first)
    after_twin = LabelEvent.objects.create(**item, old_label="partial", new_label="aligned", previous=twin)
    untouched = _record(labelling, 1)  # another item with a sound chain

    with connection.schema_editor() as editor:
        repair.label_chains_repair(apps, editor)
        editor.add_constraint(LabelEvent, _constraint(LabelEvent, "label_event_one_first_per_annotator_item"))  # as the migration does next

    chain = list(
        LabelEvent.objects.filter(simple_sentence_id=simple[0]).order_by("pk").values_list("pk", "previous_id", "old_label", "new_label")
    )
    assert chain == [
        (first.pk, None, "", "aligned"),
        (twin.pk, first.pk, "aligned", "partial"),
        (after_first.pk, twin.pk, "partial", "not_aligned"),
        (after_twin.pk, after_first.pk, "not_aligned", "aligned"),
    ]  # every event kept, in the order stored; the current label (the newest event) is unchanged
    assert LabelEvent.objects.get(pk=untouched.pk).previous_id is None
    latest = _record(labelling, 0, label="partial", expected=after_twin.pk)  # writes carry on from the repaired chain
    assert latest.previous_id == after_twin.pk
