"""Adjudication and verification: disagreements surface, agreement is accepted, the final label is a new event."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import DocumentPair
from annotation import services
from annotation.adjudication.review import pair_item_states, reviewer_changes
from annotation.labels import current_labels, pair_verified
from annotation.models import Assignment, LabelEvent, PairVerification
from tests.annotation.conftest import label_now, tram_project
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE


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


def _changes_pair_by_pair(project, annotator):
    """What the page listed before it read every pair at once: pair_item_states of each assigned pair."""
    name = annotator.get_username()
    changes = []
    for assignment in Assignment.objects.filter(project=project, annotator=annotator).order_by("pair_id"):
        for state in pair_item_states(project, assignment.pair):
            if state.adjudication is not None and state.labels.get(name) != state.final:
                changes.append((state.simple.pk, state.complex.pk, state.labels.get(name), state.final))
    return changes


def test_reviewer_changes_agree_with_the_pair_review_in_a_fixed_number_of_queries(corpus, owner, annotator, django_assert_num_queries):
    files = []
    for title in ("Tram", "Bus", "Ferry"):
        files += [(f"{title}-adv.txt", SAMPLE_ADV.replace("tram", title.lower()).encode()), (f"{title}-ele.txt", SAMPLE_ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text")).errors
    ben = get_user_model().objects.create_user("ben", password="b-pass-123")
    project = services.project_create(name="Three pairs", corpus=corpus, created_by=owner, overlap=2)
    for user in (annotator, ben):
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    pairs = list(DocumentPair.objects.filter(corpus=corpus).order_by("pk"))
    for number, pair in enumerate(pairs):
        simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
        complex_ = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
        label_now(project, annotator, pair, simple[0], complex_[0], "aligned")  # kept by the reviewer
        label_now(project, annotator, pair, simple[1], complex_[0], "aligned")  # changed to partial
        label_now(project, ben, pair, simple[2], complex_[1], "partial")  # anna never labelled it
        if number == 1:
            services.assignment_complete(project=project, annotator=annotator, pair=pair)  # then hers is "not aligned"
        for s, c, final in (
            (simple[0], complex_[0], "aligned"),
            (simple[1], complex_[0], "partial"),
            (simple[2], complex_[1], "not_aligned"),
        ):
            services.adjudicate(
                project=project, reviewer=owner, pair=pair, simple_sentence_id=s, complex_sentence_id=c,
                label=final, expected_previous=None,
            )  # fmt: skip
    with django_assert_num_queries(4):
        changes = reviewer_changes(project, annotator)
    assert [(c.simple.pk, c.complex.pk, c.mine, c.final) for c in changes] == _changes_pair_by_pair(project, annotator)
    changed, unlabelled = ("aligned", "partial"), (None, "not_aligned")
    # in the pair she marked done, her unlabelled item counts as "not aligned" and agrees with the reviewer
    assert [(c.mine, c.final) for c in changes] == [changed, unlabelled, changed, changed, unlabelled]
