"""REST API: labels are append-only events; create and update append, roles as on the annotation and review pages."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import LabelEvent
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments

LABELS = "projects/{project}/labels/"


def item(world, simple: int = 0, complex_: int = 0, **extra) -> dict:
    return {"pair": world.pair.pk, "simple_sentence": world.simple[simple].pk, "complex_sentence": world.complex_[complex_].pk, **extra}


def test_an_annotator_labels_and_relabels_and_every_write_appends_an_event(api_world):
    client = api_world.client("anna")
    created = client.post(api_world.url(LABELS), item(api_world, label="aligned", seconds_spent=2.5), format="json")
    assert created.status_code == 201, created.content
    first = created.json()
    assert first["new_label"] == "aligned" and first["old_label"] == "" and first["source"] == "human" and first["annotator"] == "anna"
    updated = client.put(api_world.url(f"{LABELS}{first['id']}/"), {"label": "partial"}, format="json")
    assert updated.status_code == 200, updated.content
    second = updated.json()
    assert second["id"] != first["id"] and second["previous"] == first["id"]
    assert (second["old_label"], second["new_label"]) == ("aligned", "partial")
    assert second["simple_sentence"] == first["simple_sentence"] and second["complex_sentence"] == first["complex_sentence"]
    old = LabelEvent.objects.get(pk=first["id"])
    assert old.new_label == "aligned" and old.seconds_spent == 2.5  # the first row is unchanged
    history = results(client.get(api_world.url(LABELS)))
    assert [row["id"] for row in history] == [first["id"], second["id"]]


def test_a_second_create_for_the_same_item_without_expected_previous_is_a_conflict(api_world):
    client = api_world.client("anna")
    first = client.post(api_world.url(LABELS), item(api_world, label="aligned"), format="json").json()
    again = client.post(api_world.url(LABELS), item(api_world, label="partial"), format="json")
    assert again.status_code == 409
    assert again.json()["current"]["id"] == first["id"] and again.json()["current"]["new_label"] == "aligned"
    ok = client.post(api_world.url(LABELS), item(api_world, label="partial", expected_previous=first["id"]), format="json")
    assert ok.status_code == 201 and LabelEvent.objects.count() == 2


def test_updating_a_stale_event_is_a_conflict_and_appends_nothing(api_world):
    client = api_world.client("anna")
    first = client.post(api_world.url(LABELS), item(api_world, label="aligned"), format="json").json()
    client.put(api_world.url(f"{LABELS}{first['id']}/"), {"label": "partial"}, format="json")
    stale = client.put(api_world.url(f"{LABELS}{first['id']}/"), {"label": "not_aligned"}, format="json")
    assert stale.status_code == 409 and stale.json()["current"]["new_label"] == "partial"
    assert LabelEvent.objects.count() == 2


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"label": "maybe"}, "label", "not a valid choice"),
        ({"simple_sentence": "complex"}, "simple_sentence", "is not a sentence of the simple document"),
        ({"complex_sentence": "simple"}, "complex_sentence", "is not a sentence of the complex document"),
        ({"simple_sentence": 999999}, "simple_sentence", "is not a sentence of the simple document"),
        ({"pair": 999999}, "pair", "does not exist"),
        ({"source": "undo"}, "source", "not a valid choice"),
        ({"seconds_spent": -1}, "seconds_spent", "greater than or equal to 0"),
        ({"simple_sentence": "x"}, "simple_sentence", "valid integer"),
    ],
)
def test_bad_label_input_names_the_field_and_stores_nothing(api_world, change, field, message):
    payload = item(api_world, label="aligned")
    swapped = {"complex": api_world.complex_[0].pk, "simple": api_world.simple[0].pk}
    payload.update({key: swapped.get(value, value) if isinstance(value, str) else value for key, value in change.items()})
    response = api_world.client("anna").post(api_world.url(LABELS), payload, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert not LabelEvent.objects.exists()


def test_a_pair_of_another_project_is_unknown_here(api_world):
    other = services.project_create(name="Other", corpus=api_world.corpus, created_by=api_world.users["owner"])
    response = api_world.client("owner").post(
        f"/api/projects/{other.pk}/labels/", item(api_world, label="aligned", pair=999999), format="json"
    )
    assert response.status_code == 400 and "does not exist" in response.json()["pair"][0]


@pytest.mark.parametrize(("persona", "code"), [("viewer", 403), ("manager", 403), ("outsider", 404)])
def test_only_assigned_annotators_record_labels(api_world, persona, code):
    response = api_world.client(persona).post(api_world.url(LABELS), item(api_world, label="aligned"), format="json")
    assert response.status_code == code
    if code == 403:
        assert "is not assigned" in response.json()["detail"]
    assert not LabelEvent.objects.exists()


def test_an_annotator_sees_and_changes_only_their_own_labels(api_world):
    bens = api_world.client("ben").post(api_world.url(LABELS), item(api_world, label="aligned"), format="json").json()
    anna = api_world.client("anna")
    assert results(anna.get(api_world.url(LABELS))) == []
    assert anna.get(api_world.url(f"{LABELS}{bens['id']}/")).status_code == 404
    assert anna.put(api_world.url(f"{LABELS}{bens['id']}/"), {"label": "partial"}, format="json").status_code == 404
    manager = api_world.client("manager")  # managers see everything but change only their own labels
    assert manager.get(api_world.url(f"{LABELS}{bens['id']}/")).status_code == 200
    refused = manager.put(api_world.url(f"{LABELS}{bens['id']}/"), {"label": "partial"}, format="json")
    assert refused.status_code == 403 and LabelEvent.objects.count() == 1


def test_history_filters_by_pair_annotator_and_source(api_world):
    api_world.client("anna").post(api_world.url(LABELS), item(api_world, label="aligned"), format="json")
    api_world.client("ben").post(api_world.url(LABELS), item(api_world, 1, 1, label="partial", source="suggestion"), format="json")
    viewer = api_world.client("viewer")
    assert len(results(viewer.get(api_world.url(LABELS)))) == 2
    assert [row["annotator"] for row in results(viewer.get(api_world.url(LABELS + "?annotator=ben")))] == ["ben"]
    assert [row["annotator"] for row in results(viewer.get(api_world.url(LABELS + "?source=suggestion")))] == ["ben"]
    assert len(results(viewer.get(api_world.url(LABELS + "?pair={pair}")))) == 2
    assert results(viewer.get(api_world.url(LABELS + "?source=adjudication"))) == []
    assert viewer.get(api_world.url(LABELS + "?source=magic")).status_code == 400


def test_a_manager_adjudicates_and_reviews_that_too_append_events(api_world):
    for persona, label in (("anna", "aligned"), ("ben", "partial")):
        api_world.client(persona).post(api_world.url(LABELS), item(api_world, label=label), format="json")
    manager = api_world.client("manager")
    response = manager.post(api_world.url(LABELS), item(api_world, label="partial", source="adjudication"), format="json")
    assert response.status_code == 201, response.content
    final = response.json()
    assert final["source"] == "adjudication" and final["annotator"] == "owner"
    changed = manager.put(api_world.url(f"{LABELS}{final['id']}/"), {"label": "aligned"}, format="json")
    assert changed.status_code == 200 and changed.json()["previous"] == final["id"] and changed.json()["source"] == "adjudication"
    assert LabelEvent.objects.filter(source="adjudication").count() == 2
    anna_labels = LabelEvent.objects.filter(annotator=api_world.users["anna"]).values_list("new_label", flat=True)
    assert list(anna_labels) == ["aligned"]  # annotators' own events stay as they were


@pytest.mark.parametrize("persona", ["anna", "viewer"])
def test_only_managers_adjudicate(api_world, persona):
    response = api_world.client(persona).post(api_world.url(LABELS), item(api_world, label="aligned", source="adjudication"), format="json")
    assert response.status_code == 403 and "only the managers" in response.json()["detail"]
    assert not LabelEvent.objects.exists()


def test_an_adjudication_needs_a_real_label_and_a_fresh_expected_previous(api_world):
    manager = api_world.client("manager")
    blank = manager.post(api_world.url(LABELS), item(api_world, label="", source="adjudication"), format="json")
    assert blank.status_code == 400 and "final label" in blank.json()["label"][0]
    manager.post(api_world.url(LABELS), item(api_world, label="aligned", source="adjudication"), format="json")
    again = manager.post(api_world.url(LABELS), item(api_world, label="partial", source="adjudication"), format="json")
    assert again.status_code == 409 and again.json()["current"]["new_label"] == "aligned"


def test_an_empty_label_clears_the_annotators_item(api_world):
    client = api_world.client("anna")
    first = client.post(api_world.url(LABELS), item(api_world, label="aligned"), format="json").json()
    cleared = client.put(api_world.url(f"{LABELS}{first['id']}/"), {"label": ""}, format="json").json()
    assert (cleared["old_label"], cleared["new_label"]) == ("aligned", "")


def test_labels_are_never_deleted_or_patched(api_world):
    client = api_world.client("anna")
    first = client.post(api_world.url(LABELS), item(api_world, label="aligned"), format="json").json()
    assert client.delete(api_world.url(f"{LABELS}{first['id']}/")).status_code == 405
    assert client.patch(api_world.url(f"{LABELS}{first['id']}/"), {"label": "partial"}, format="json").status_code == 405
    assert LabelEvent.objects.get().new_label == "aligned"
