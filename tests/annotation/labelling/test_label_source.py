"""A single label saved from the screen says whether it accepted the aligner's suggestion (``source``), checked by name."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import LabelEvent

JSON = {"HTTP_ACCEPT": "application/json"}


def _save(client, team, simple, complex_, **fields):
    url = reverse("annotation:label_save", args=[team.project.pk, team.pair.pk])
    data = {"simple_sentence_id": simple.pk, "complex_sentence_id": complex_.pk, "label": "aligned", "expected_previous": "", **fields}
    return client.post(url, data, **JSON)


def test_a_label_is_stored_with_the_source_the_screen_sends_and_a_bad_one_is_refused_by_name(client, team_of_two):
    client.force_login(team_of_two.anna)
    simple, complex_ = team_of_two.simple, team_of_two.complex_
    assert _save(client, team_of_two, simple[0], complex_[0], source="suggestion").status_code == 200
    assert _save(client, team_of_two, simple[1], complex_[1]).status_code == 200  # an older page sends none: human
    refused = _save(client, team_of_two, simple[2], complex_[2], source="undo")  # reserved for the server's own undo
    assert refused.status_code == 400 and refused.json()["error"] == "source: 'undo' is not one of human, suggestion"
    stored = dict(LabelEvent.objects.values_list("simple_sentence_id", "source"))
    assert stored == {simple[0].pk: "suggestion", simple[1].pk: "human"}
