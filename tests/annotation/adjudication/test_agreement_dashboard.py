"""The agreement dashboard: ratings built from the label history, both scopes, confusion matrix, access."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.adjudication.agreement import SCOPE_SHOWN, agreement_report
from annotation.adjudication.agreement_data import project_agreement
from tests.annotation.conftest import label_now, tram_project


@pytest.fixture
def team(team_of_two):
    t = team_of_two
    t.label(t.anna, 0, 0, "aligned"), t.label(t.ben, 0, 0, "aligned")
    t.label(t.anna, 1, 0, "aligned"), t.label(t.ben, 1, 0, "partial")
    t.label(t.anna, 2, 2, "partial"), t.label(t.ben, 2, 2, "partial")
    t.label(t.anna, 3, 3, "aligned")
    for user in (t.anna, t.ben):
        services.assignment_complete(project=t.project, annotator=user, pair=t.pair)
    return t.project, t.anna, t.ben, t.pair, t.simple, t.complex_


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


def test_a_per_pair_dash_says_why_the_measure_is_undefined(client, tram_corpus, owner, annotator):
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Lone")
    label_now(project, annotator, pair, simple[0], complex_[0])
    client.force_login(owner)
    page = client.get(reverse("annotation:project_agreement", args=[project.pk])).content.decode()
    assert '<td class="small muted undefined-why">undefined: needs at least 2 annotators</td>' in page


def test_pairwise_f1_is_over_the_items_both_labelled_and_the_page_says_so(client, owner, team_of_two):
    """anna labels four items and marks the pair done, ben labels two of them and is still working.

    Shown candidates (no suggestion run): the four items anna labelled. Both labelled: items 0 and 1, where
    anna links both and ben links item 0 only: TP 1, FN 1, F1 2/3. Over all four items ben's two unlabelled
    ones count as missed links too: TP 1, FN 3, F1 2/5.
    """
    t = team_of_two
    t.label(t.anna, 0, 0, "aligned"), t.label(t.anna, 1, 1, "partial"), t.label(t.anna, 2, 2, "aligned"), t.label(t.anna, 3, 3, "aligned")
    t.label(t.ben, 0, 0, "aligned"), t.label(t.ben, 1, 1, "not_aligned")
    services.assignment_complete(project=t.project, annotator=t.anna, pair=t.pair)
    agreement = project_agreement(t.project)
    both = agreement.pairwise[("anna", "ben")]
    assert (both.tp, both.fp, both.fn, both.items) == (1, 0, 1, 2)
    assert both.f1 == pytest.approx(2 / 3)
    assert both.items == agreement.shown.cohen_items[("anna", "ben")]  # the items of their Cohen's kappa
    everything = agreement.pairwise_all_items[("anna", "ben")]
    assert (everything.tp, everything.fn, everything.items) == (1, 3, 4)
    assert everything.f1 == pytest.approx(2 / 5)
    client.force_login(owner)
    html = client.get(reverse("annotation:project_agreement", args=[t.project.pk])).content.decode()
    assert "Scope: two annotators are compared on the <strong>items both labelled</strong>" in html
    row = html[html.index('data-prf="anna|ben"') :].split("</tr>")[0]
    assert '<td class="num" data-items>2</td>' in row and '<td class="num" data-f1>0.667</td>' in row
    assert '<td class="num muted" data-f1-all>0.400 <span class="small">(4 items)</span></td>' in row
