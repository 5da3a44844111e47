"""The agreement dashboard: ratings built from the label history, both scopes, confusion matrix, access."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from alignment.models import DocumentPair
from annotation import services
from annotation.agreement import SCOPE_SHOWN, agreement_report
from annotation.agreement_data import project_agreement


@pytest.fixture
def team(tram_corpus, owner):
    users = get_user_model().objects
    anna, ben = users.create_user("anna", password="a-pass-123"), users.create_user("ben", password="b-pass-123")
    project = services.project_create(name="Agree", corpus=tram_corpus, created_by=owner, overlap=2)
    for user in (anna, ben):
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))

    def label(user, s, c, value):
        services.label_record(project=project, annotator=user, pair=pair, simple_sentence_id=simple[s].pk,
                              complex_sentence_id=complex_[c].pk, label=value, expected_previous=None)

    label(anna, 0, 0, "aligned"), label(ben, 0, 0, "aligned")
    label(anna, 1, 0, "aligned"), label(ben, 1, 0, "partial")
    label(anna, 2, 2, "partial"), label(ben, 2, 2, "partial")
    label(anna, 3, 3, "aligned")
    for user in (anna, ben):
        services.assignment_complete(project=project, annotator=user, pair=pair)
    return project, anna, ben, pair, simple, complex_


def test_shown_scope_matches_the_statistics_on_hand_built_ratings(team):
    project, anna, ben, pair, simple, complex_ = team
    s, c = [x.pk for x in simple], [x.pk for x in complex_]
    expected = agreement_report(
        {
            "anna": {(s[0], c[0]): "aligned", (s[1], c[0]): "aligned", (s[2], c[2]): "partial", (s[3], c[3]): "aligned"},
            "ben": {(s[0], c[0]): "aligned", (s[1], c[0]): "partial", (s[2], c[2]): "partial", (s[3], c[3]): "not_aligned"},
        },
        scope=SCOPE_SHOWN,
    )
    agreement = project_agreement(project)
    assert agreement.shown.krippendorff_alpha == pytest.approx(expected.krippendorff_alpha)
    assert agreement.shown.cohen[("anna", "ben")] == pytest.approx(expected.cohen[("anna", "ben")])
    assert agreement.shown.confusion("anna", "ben")[0] == [1, 1, 1]  # anna's aligned: ben aligned, partial, not


def test_all_sentence_pairs_inflate_agreement(team):
    agreement = project_agreement(team[0])
    assert agreement.all_pairs.items > agreement.shown.items
    assert agreement.all_pairs.krippendorff_alpha > agreement.shown.krippendorff_alpha


def test_manager_sees_the_dashboard_annotators_do_not_outsiders_get_404(client, owner, outsider, team):
    project, anna = team[0], team[1]
    client.force_login(owner)
    page = client.get(reverse("annotation:project_agreement", args=[project.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "Shown candidates" in html and "All sentence pairs" in html
    assert 'id="confusion"' in html
    client.force_login(anna)
    assert client.get(reverse("annotation:project_agreement", args=[project.pk])).status_code == 403
    client.force_login(outsider)
    assert client.get(reverse("annotation:project_agreement", args=[project.pk])).status_code == 404


def test_dashboard_of_a_project_without_labels_says_what_is_undefined(client, owner, tram_corpus):
    project = services.project_create(name="Empty", corpus=tram_corpus, created_by=owner)
    client.force_login(owner)
    html = client.get(reverse("annotation:project_agreement", args=[project.pk])).content.decode()
    assert "Needs two annotators" in html and "–" in html
