"""Adjudication and verification: disagreements surface, agreement is accepted, the final label is a new event."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.adjudication.review import pair_item_states
from annotation.labels import current_labels, pair_verified
from annotation.models import LabelEvent, PairVerification
from tests.annotation.conftest import label_now, tram_project


@pytest.fixture
def team(team_of_two):
    t = team_of_two
    t.label(t.anna, 0, 0, "aligned"), t.label(t.ben, 0, 0, "aligned")  # agreed
    t.label(t.anna, 1, 0, "aligned"), t.label(t.ben, 1, 0, "partial")  # disagreement
    t.label(t.anna, 2, 2, "partial")  # ben leaves it: not aligned once he is done
    return t.project, t.anna, t.ben, t.pair, t.simple, t.complex_


def _state(states, simple, complex_):
    return next(s for s in states if (s.simple.pk, s.complex.pk) == (simple.pk, complex_.pk))


def test_items_are_agreed_disagreed_or_waiting(team):
    project, anna, ben, pair, simple, complex_ = team
    states = pair_item_states(project, pair)
    assert _state(states, simple[0], complex_[0]).final == "aligned"
    assert _state(states, simple[1], complex_[0]).status == "disagreement"
    assert _state(states, simple[2], complex_[2]).status == "waiting for annotators"
    services.assignment_complete(project=project, annotator=ben, pair=pair)
    assert _state(pair_item_states(project, pair), simple[2], complex_[2]).labels == {"anna": "partial", "ben": "not_aligned"}


def test_verification_waits_for_adjudication_then_makes_the_pair_gold(team, owner):
    project, anna, ben, pair, simple, complex_ = team
    services.assignment_complete(project=project, annotator=ben, pair=pair)
    with pytest.raises(ValueError, match="2 sentence pair\\(s\\) still need adjudication"):
        services.pair_verify(project=project, pair=pair, by=owner)
    for s, c, label in ((1, 0, "partial"), (2, 2, "not_aligned")):
        services.adjudicate(
            project=project,
            reviewer=owner,
            pair=pair,
            simple_sentence_id=simple[s].pk,
            complex_sentence_id=complex_[c].pk,
            label=label,
            expected_previous=None,
        )
    services.pair_verify(project=project, pair=pair, by=owner)
    assert pair_verified(project, pair) is not None
    assert all(state.final is not None for state in pair_item_states(project, pair))
    # the annotators' own labels are untouched; the reviewer's decision is its own event stream
    assert current_labels(project, ben, pair.pk)[(simple[1].pk, complex_[0].pk)].new_label == "partial"
    assert LabelEvent.objects.filter(source="adjudication").count() == 2


def test_annotator_sees_what_the_reviewer_changed(client, team, owner):
    project, anna, ben, pair, simple, complex_ = team
    services.adjudicate(
        project=project,
        reviewer=owner,
        pair=pair,
        simple_sentence_id=simple[1].pk,
        complex_sentence_id=complex_[0].pk,
        label="partial",
        expected_previous=None,
    )
    client.force_login(anna)
    html = client.get(reverse("annotation:project_detail", args=[project.pk])).content.decode()
    assert "What the reviewer changed in your work" in html and simple[1].text in html
    client.force_login(ben)
    assert "What the reviewer changed" not in client.get(reverse("annotation:project_detail", args=[project.pk])).content.decode()


def test_review_page_adjudicates_and_verifies_through_forms(client, team, owner):
    project, anna, ben, pair, simple, complex_ = team
    client.force_login(owner)
    url = reverse("annotation:pair_review", args=[project.pk, pair.pk])
    html = client.get(url).content.decode()
    assert "disagreement" in html and simple[1].text in html
    client.post(
        reverse("annotation:pair_adjudicate", args=[project.pk, pair.pk]),
        {"simple_sentence_id": simple[1].pk, "complex_sentence_id": complex_[0].pk, "label": "aligned", "expected_previous": ""},
    )
    response = client.post(reverse("annotation:pair_verify", args=[project.pk, pair.pk]), {"verified": "1"}, follow=True)
    assert "Not verified: 1 sentence pair(s) still need" in response.content.decode()  # anna's (2, 2) is still waiting on ben
    assert not PairVerification.objects.exists()


def test_stale_adjudication_is_refused_and_annotators_cannot_review(client, team, owner):
    project, anna, ben, pair, simple, complex_ = team
    first = services.adjudicate(
        project=project,
        reviewer=owner,
        pair=pair,
        simple_sentence_id=simple[1].pk,
        complex_sentence_id=complex_[0].pk,
        label="aligned",
        expected_previous=None,
    )
    with pytest.raises(services.LabelConflict, match="another reviewer set this pair to aligned"):
        services.adjudicate(
            project=project,
            reviewer=owner,
            pair=pair,
            simple_sentence_id=simple[1].pk,
            complex_sentence_id=complex_[0].pk,
            label="partial",
            expected_previous=None,
        )
    assert first.pk
    client.force_login(anna)
    assert client.get(reverse("annotation:pair_review", args=[project.pk, pair.pk])).status_code == 403
    assert client.post(reverse("annotation:pair_verify", args=[project.pk, pair.pk])).status_code == 403


def test_a_decision_from_htmx_answers_its_row_and_the_open_count_with_human_labels(client, team, owner):
    project, anna, ben, pair, simple, complex_ = team
    client.force_login(owner)
    url = reverse("annotation:pair_adjudicate", args=[project.pk, pair.pk])
    fields = {"simple_sentence_id": simple[1].pk, "complex_sentence_id": complex_[0].pk, "label": "not_aligned", "expected_previous": ""}
    response = client.post(url, fields, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith(
        f'<tr class="review-adjudicated" id="review-{simple[1].pk}-{complex_[0].pk}"'
    )
    assert '<span class="badge badge-not_aligned">not aligned</span>' in html and ">not_aligned<" not in html
    assert 'id="review-lead" hx-swap-oob="true">1 of 3 labelled sentence pairs still need a decision' in html
    stale = client.post(url, {**fields, "label": "partial"}, HTTP_HX_REQUEST="true").content.decode()  # expected_previous is stale
    assert 'role="alert">Not saved: another reviewer set this pair to not aligned meanwhile' in stale
    assert LabelEvent.objects.filter(source="adjudication").count() == 1


def test_a_pair_only_one_annotator_labelled_is_not_called_agreed(tram_corpus, owner, annotator):
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Single")
    label_now(project, annotator, pair, simple[0], complex_[0])
    (state,) = pair_item_states(project, pair)
    assert (state.status, state.final) == ("one annotator", "aligned")
