"""Edits of the alignment view: several label changes stored as one action (all or nothing), undone as a whole, resent safely."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation import services
from annotation.labelling import edits
from annotation.models import LabelEvent
from tests.annotation.conftest import label_now, tram_project

EDIT_ID = "e" * 32


@pytest.fixture
def setup(client, tram_corpus, owner, annotator):
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Edits")
    client.force_login(annotator)
    return project, pair, simple, complex_, annotator


def _url(name: str, project, pair) -> str:
    return reverse(f"annotation:{name}", kwargs={"project_id": project.pk, "pair_id": pair.pk})


def _edit(client, project, pair, changes, client_action_id=EDIT_ID, seconds="6"):
    body = {"changes": changes if isinstance(changes, str) else json.dumps(changes), "seconds_spent": seconds}
    if client_action_id:
        body["client_action_id"] = client_action_id
    return client.post(_url("label_edit", project, pair), body)


def _labels(project) -> dict[tuple[int, int], str]:
    latest: dict[tuple[int, int], str] = {}
    for event in LabelEvent.objects.filter(project=project).order_by("pk"):
        latest[(event.simple_sentence_id, event.complex_sentence_id)] = event.new_label
    return latest


def test_an_edit_stores_each_change_as_a_label_event_under_one_action_id_and_shares_its_time(client, setup):
    project, pair, simple, complex_, _anna = setup
    changes = [
        {"simple": simple[0], "complex": complex_[0], "label": "aligned", "source": "suggestion"},
        {"simple": simple[0], "complex": complex_[1], "label": "aligned"},
        {"simple": simple[1], "complex": complex_[1], "label": "partial"},
    ]
    answer = _edit(client, project, pair, changes)
    assert answer.status_code == 200
    events = list(LabelEvent.objects.filter(project=project).order_by("pk"))
    assert [(e.simple_sentence_id, e.complex_sentence_id, e.new_label, e.source) for e in events] == [
        (simple[0], complex_[0], "aligned", "suggestion"),
        (simple[0], complex_[1], "aligned", "human"),
        (simple[1], complex_[1], "partial", "human"),
    ]
    assert [e.client_action_id for e in events] == [EDIT_ID, f"{EDIT_ID}.2", f"{EDIT_ID}.3"]
    assert [e.seconds_spent for e in events] == [2.0, 2.0, 2.0]
    body = answer.json()
    assert body["changes"] == [
        {"simple": e.simple_sentence_id, "complex": e.complex_sentence_id, "label": e.new_label, "event": e.pk} for e in events
    ]
    assert body["progress"]["labelled"] == 2


def test_one_stale_change_refuses_the_whole_edit_and_stores_nothing(client, setup):
    project, pair, simple, complex_, anna = setup
    other_tab = label_now(project, anna, pair, simple[1], complex_[1], "not_aligned")  # the screen has not seen it
    changes = [
        {"simple": simple[0], "complex": complex_[0], "label": "aligned"},
        {"simple": simple[1], "complex": complex_[1], "label": "aligned", "expected_previous": None},
    ]
    answer = _edit(client, project, pair, changes)
    assert answer.status_code == 409
    body = answer.json()
    assert (body["simple"], body["complex"]) == (simple[1], complex_[1])
    assert body["current"] == {"label": "not_aligned", "event": other_tab.pk}
    assert "changed elsewhere" in body["error"]
    assert list(LabelEvent.objects.filter(project=project)) == [other_tab]  # the first change was rolled back


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ("not json", "changes: not JSON"),
        ([], "changes: an edit is a non-empty list of changes"),
        ([{"simple": 1, "complex": 1, "label": "maybe"}], "changes[0].label: unknown label 'maybe'"),
        ([{"simple": "one", "complex": 1, "label": "aligned"}], "changes[0].simple: 'one' is not an id"),
        ([{"simple": 1, "complex": 1, "label": "aligned", "source": "adjudication"}], "changes[0].source: 'adjudication' is not one of"),
        ([{"simple": 1, "complex": 1, "label": "aligned", "expected_previous": -3}], "changes[0].expected_previous: -3 is not an id"),
    ],
)
def test_bad_edits_are_refused_naming_the_change_and_field_and_store_nothing(client, setup, changes, message):
    project, pair, *_ = setup
    answer = _edit(client, project, pair, changes)
    assert answer.status_code == 400 and message in answer.json()["error"]
    assert not LabelEvent.objects.filter(project=project).exists()


def test_an_edit_naming_a_pair_twice_a_foreign_sentence_or_no_action_id_is_refused(client, setup, outsider):
    project, pair, simple, complex_, _anna = setup
    twice = [{"simple": simple[0], "complex": complex_[0], "label": "aligned"}] * 2
    assert "changes[1]: simple" in _edit(client, project, pair, twice).json()["error"]
    foreign = [
        {"simple": simple[0], "complex": complex_[0], "label": "aligned"},
        {"simple": complex_[0], "complex": complex_[1], "label": "aligned"},
    ]
    answer = _edit(client, project, pair, foreign)
    assert answer.status_code == 400 and answer.json()["error"].startswith(
        f"changes[1]: sentence {complex_[0]} is not a sentence of the simple"
    )
    answer = _edit(client, project, pair, [{"simple": simple[0], "complex": complex_[0], "label": "aligned"}], client_action_id="")
    assert answer.status_code == 400 and "client_action_id: an edit needs one" in answer.json()["error"]
    assert not LabelEvent.objects.filter(project=project).exists()
    client.force_login(outsider)
    assert _edit(client, project, pair, [{"simple": simple[0], "complex": complex_[0], "label": "aligned"}]).status_code == 404


def test_a_resent_edit_is_stored_once(client, setup):
    project, pair, simple, complex_, _anna = setup
    changes = [
        {"simple": simple[0], "complex": complex_[0], "label": "aligned"},
        {"simple": simple[1], "complex": complex_[1], "label": "aligned"},
    ]
    first = _edit(client, project, pair, changes).json()
    again = _edit(client, project, pair, changes).json()  # the answer was lost: the screen sends it again, expected_previous stale
    assert again["changes"] == first["changes"]
    assert LabelEvent.objects.filter(project=project).count() == 2


def test_undo_takes_back_a_whole_edit_then_the_label_before_it_and_a_resent_undo_undoes_nothing_more(client, setup):
    project, pair, simple, complex_, anna = setup
    single = label_now(project, anna, pair, simple[2], complex_[2], "partial")
    changes = [
        {"simple": simple[0], "complex": complex_[0], "label": "aligned"},
        {"simple": simple[0], "complex": complex_[1], "label": "aligned"},
    ]
    assert _edit(client, project, pair, changes).status_code == 200
    undo = client.post(_url("label_undo", project, pair), {"client_action_id": "u" * 32}).json()
    assert undo["undone"] is True
    assert sorted((c["simple"], c["complex"], c["label"]) for c in undo["changes"]) == [
        (simple[0], complex_[0], ""),
        (simple[0], complex_[1], ""),
    ]
    assert _labels(project) == {(simple[0], complex_[0]): "", (simple[0], complex_[1]): "", (simple[2], complex_[2]): "partial"}
    undos = LabelEvent.objects.filter(project=project, source="undo").order_by("pk")
    assert [e.client_action_id for e in undos] == ["u" * 32, f"{'u' * 32}.2"]
    again = client.post(_url("label_undo", project, pair), {"client_action_id": "u" * 32}).json()
    assert sorted(c["event"] for c in again["changes"]) == sorted(c["event"] for c in undo["changes"])
    assert LabelEvent.objects.filter(project=project).count() == 5  # the resend stored nothing
    assert services.label_undo(project=project, annotator=anna, pair=pair).undoes_id == single.pk  # the next undo: the label before


def test_changes_parse_reads_sources_and_optional_expected_previous():
    parsed = edits.changes_parse(json.dumps([{"simple": 3, "complex": 4, "label": "", "expected_previous": 9, "source": "human"}]))
    assert parsed == [edits.LabelChange(3, 4, "", 9, "human")]
    assert edits.changes_parse('[{"simple": 3, "complex": 4, "label": "partial"}]')[0].expected_previous is None
