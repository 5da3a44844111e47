"""The review page's curation view: each annotator's links side by side with the merged result, open rows
first with a count of the disagreements left, and the keys that adjudicate from the keyboard."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.adjudication.review import pair_review_read


@pytest.fixture
def team(team_of_two):
    t = team_of_two
    t.label(t.anna, 0, 0, "aligned"), t.label(t.ben, 0, 0, "aligned")  # agreed
    t.label(t.anna, 1, 0, "aligned"), t.label(t.ben, 1, 0, "partial")  # disagreement
    t.label(t.anna, 1, 1, "partial")  # ben is still working: open, no disagreement
    t.label(t.anna, 2, 2, "partial"), t.label(t.ben, 2, 2, "not_aligned")  # disagreement
    t.label(t.ben, 3, 3, "aligned")  # anna is still working
    return t


def _chips(cell_html: str) -> list[str]:
    """The chips of one cell as "class text", e.g. "chip-aligned differs #1" (differs: an open disagreement)."""
    return [f"{classes.replace('chip ', '')} {text}" for classes, text in re.findall(r'class="(chip[^"]*)"[^>]*>([^<]*)<', cell_html)]


def _line_cells(html: str, simple_pk: int) -> list[str]:
    line = re.search(rf'<tr class="curation-line[^"]*" id="curation-{simple_pk}".*?</tr>', html, re.S)
    assert line, f"no side-by-side line for simple sentence {simple_pk}"
    return re.findall(r"<td[^>]*>(.*?)</td>", line.group(0), re.S)[1:]  # the annotators' columns, then the merged one


def test_the_side_by_side_lines_fold_items_per_simple_sentence(team):
    review = pair_review_read(team.project, team.pair)
    assert review.annotators == ["anna", "ben"]
    assert (review.open_count, review.disagreements_left, review.total) == (4, 2, 5)
    lines = {line.simple.index: line for line in review.lines}
    assert sorted(lines) == [0, 1, 2, 3]
    second = lines[1]
    anna, ben = second.columns
    assert [(link.state.complex.index, link.label) for link in anna.links] == [(0, "aligned"), (1, "partial")]
    assert [(link.state.complex.index, link.label) for link in ben.links] == [(0, "partial")] and ben.working
    assert [(link.state.complex.index, link.label) for link in second.merged] == [(0, ""), (1, "")]  # both still open
    assert second.open and second.disagreement
    assert not lines[0].open and not lines[0].disagreement
    assert [link.label for link in lines[0].merged] == ["aligned"]
    assert lines[2].columns[1].links == [] and not lines[2].columns[1].working  # ben said not aligned: links nothing


def test_review_page_puts_the_annotators_side_by_side_and_marks_disagreements(client, team, owner):
    client.force_login(owner)
    html = client.get(reverse("annotation:pair_review", args=[team.project.pk, team.pair.pk])).content.decode()
    anna, ben, merged = _line_cells(html, team.simple[1].pk)
    assert _chips(anna) == ["chip-aligned differs #1", "chip-partial #2"]
    assert _chips(ben) == ["chip-partial differs #1"] and "working" in ben
    assert _chips(merged) == ["chip-open differs #1 ?", "chip-open #2 ?"]
    assert re.search(rf'<tr class="curation-line open disagreement" id="curation-{team.simple[1].pk}"', html)
    assert re.search(rf'<tr class="curation-line" id="curation-{team.simple[0].pk}"', html)  # agreed: not highlighted
    assert '<strong class="left-count">2 disagreements left</strong> · 4 of 5 labelled sentence pairs still need a decision' in html
    # a chip links to its row when the decision table shows it; the agreed item is not shown under "open"
    assert f'href="#review-{team.simple[1].pk}-{team.complex_[0].pk}"' in html
    assert f'href="#review-{team.simple[0].pk}-{team.complex_[0].pk}"' not in html


def test_open_rows_come_first_when_showing_all(client, team, owner):
    team.label(team.ben, 1, 1, "partial")  # now agreed, settled; it sorts after the open rows
    client.force_login(owner)
    html = client.get(reverse("annotation:pair_review", args=[team.project.pk, team.pair.pk]) + "?show=all").content.decode()
    rows = re.findall(
        r'<tr class="review-([a-z-]+)" id="review-\d+-\d+" data-row data-simple="\d+" data-complex="\d+" data-open="([01])"', html
    )
    assert [open_ for _, open_ in rows] == ["1", "1", "1", "0", "0"]
    assert [status for status, _ in rows] == ["disagreement", "disagreement", "waiting-for-annotators", "agreed", "agreed"]


def test_the_page_names_the_keys_and_loads_the_keyboard_script(client, team, owner):
    client.force_login(owner)
    html = client.get(reverse("annotation:pair_review", args=[team.project.pk, team.pair.pk])).content.decode()
    assert re.search(r'<script src="/static/js/curation[.\w]*\.js" defer>', html)
    assert '<th class="annotator-head" title="anna">anna <kbd' in html and ">1</kbd></th>" in html and ">2</kbd></th>" in html
    help_box = html[html.index('id="help"') :]
    for row in ("take <strong>anna</strong>'s label", "take <strong>ben</strong>'s label", "mark the pair verified"):
        assert row in help_box
    assert 'id="verify-form"' in html
    assert 'title="Final label: partial (key p)"' in html and 'title="Final label: not aligned (key n)"' in html


def test_a_decision_also_swaps_its_side_by_side_line_and_the_count(client, team, owner):
    client.force_login(owner)
    url = reverse("annotation:pair_adjudicate", args=[team.project.pk, team.pair.pk])
    fields = {"simple_sentence_id": team.simple[1].pk, "complex_sentence_id": team.complex_[0].pk, "label": "partial"}
    html = client.post(url, {**fields, "expected_previous": ""}, HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith(f'<tr class="review-adjudicated" id="review-{team.simple[1].pk}-{team.complex_[0].pk}"')
    assert f'id="curation-{team.simple[1].pk}" hx-swap-oob="true"' in html
    anna, _, merged = _line_cells(html, team.simple[1].pk)
    assert _chips(merged) == ["chip-partial #1", "chip-open #2 ?"]  # decided: no longer ringed as a disagreement
    assert _chips(anna) == ["chip-aligned #1", "chip-partial #2"]
    assert '<strong class="left-count">1 disagreement left</strong> · 3 of 5 labelled' in html


def test_the_last_disagreement_decided_drops_the_count(client, team, owner):
    client.force_login(owner)
    url = reverse("annotation:pair_adjudicate", args=[team.project.pk, team.pair.pk])
    for s, c in ((1, 0), (2, 2)):
        fields = {"simple_sentence_id": team.simple[s].pk, "complex_sentence_id": team.complex_[c].pk, "label": "aligned"}
        html = client.post(url, {**fields, "expected_previous": ""}, HTTP_HX_REQUEST="true").content.decode()
    assert "left-count" not in html and 'data-open="2" id="review-lead" hx-swap-oob="true">2 of 5 labelled' in html
