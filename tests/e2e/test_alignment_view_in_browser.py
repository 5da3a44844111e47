"""The alignment view in Chromium: the whole alignment of a pair as rows, edited by keyboard (accept a paragraph, merge,
split, unalign, dissolve), each edit stored as ordinary label events and undone as a whole with u; a reviewer's
differing decision is marked; at 1280×720 and 1024×768 the current row stays on screen."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation import services
from annotation.labels import latest_event
from annotation.models import LabelEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url
from tests.e2e.test_keyboard_flow_in_browser import _best_suggestions, twenty_sentence_pair  # noqa: F401 - a fixture

ROWS = "#alignment-view .align-row"


def _row_of(page: Page, side: str, sentence_id: int):
    return page.locator(ROWS, has=page.locator(f"#a-{side[0]}-{sentence_id}"))


def _current(simple_id: int, complex_id: int) -> str:
    event = LabelEvent.objects.filter(simple_sentence_id=simple_id, complex_sentence_id=complex_id).exclude(source="adjudication").last()
    return event.new_label if event else ""


def _saved(page: Page, text: str) -> None:
    expect(page.locator("#save-status")).to_contain_text(text)
    expect(page.locator("#pending")).to_be_hidden()


def test_alignment_view_shows_every_group_and_edits_them_by_keyboard_as_label_events_undone_as_a_whole(
    page: Page, live_server, twenty_sentence_pair, owner
):
    """Long because it is one editing session end to end; each step builds on the alignment the one before left."""
    project, pair, run = twenty_sentence_pair
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    best = _best_suggestions(run, pair)
    assert [best[s] for s in simple] == complex_, "the aligner suggests simple #k ~ complex #k for every k"
    project.guidelines = (
        "Link each simple sentence to every complex sentence it retells.\nA simple sentence that retells two complex ones is one 2:1 group."
    )
    project.save()
    page.set_viewport_size({"width": 1280, "height": 720})
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))

    page.keyboard.press("v")
    expect(page.locator("#alignment-view")).to_be_visible()
    expect(page.locator("#annotate .annotate-docs")).to_be_hidden()
    expect(page.locator(ROWS)).to_have_count(20)  # twenty suggested 1:1 groups, nothing unaligned
    expect(page.locator(f"{ROWS}.status-suggested")).to_have_count(20)
    expect(page.locator(f"{ROWS} .align-type").first).to_have_text("1:1")
    expect(page.locator(f"{ROWS}.current")).to_have_count(1)

    page.keyboard.press("A")  # every suggestion of the first paragraph row, in one edit
    _saved(page, "5 suggestions of paragraphs ¶1 ↔ ¶1 accepted")
    expect(page.locator(f"{ROWS}.status-own")).to_have_count(5)
    accepted = LabelEvent.objects.filter(project=project).order_by("pk")
    assert [(e.simple_sentence_id, e.complex_sentence_id, e.new_label, e.source) for e in accepted] == [
        (simple[k], complex_[k], "aligned", "suggestion") for k in range(5)
    ]
    edit_id = accepted[0].client_action_id
    assert [e.client_action_id for e in accepted] == [edit_id] + [f"{edit_id}.{k}" for k in range(2, 6)]
    expect(page.locator("#progress-count")).to_have_text("5 / 20")
    page.keyboard.press("u")  # the whole edit at once
    _saved(page, "Undone ✓ the last edit (5 sentence pairs)")
    expect(page.locator(f"{ROWS}.status-suggested")).to_have_count(20)
    assert [_current(simple[k], complex_[k]) for k in range(5)] == [""] * 5
    expect(page.locator("#progress-count")).to_have_text("0 / 20")

    page.keyboard.press("j")  # the second row: complex #2 with simple #2
    expect(_row_of(page, "simple", simple[1])).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("m")  # merged with the next row: one 2:2 group, every pair of it yours
    _saved(page, "merged into a 2:2 group")
    merged = _row_of(page, "simple", simple[1])
    expect(merged.locator(".align-type")).to_have_text("2:2")
    expect(merged).to_have_class(re.compile(r"\bstatus-own\b"))
    expect(page.locator(ROWS)).to_have_count(19)
    assert {(s, c): _current(s, c) for s in simple[1:3] for c in complex_[1:3]} == {
        (s, c): "aligned" for s in simple[1:3] for c in complex_[1:3]
    }
    assert LabelEvent.objects.filter(simple_sentence_id=simple[1], complex_sentence_id=complex_[1]).last().source == "suggestion"
    assert LabelEvent.objects.filter(simple_sentence_id=simple[1], complex_sentence_id=complex_[2]).last().source == "human"

    page.keyboard.press("l")  # the cursor on complex #3, which starts the second part
    expect(page.locator(f"#a-c-{complex_[2]}")).to_have_class(re.compile(r"\bcursor\b"))
    page.keyboard.press("b")  # split: (complex #2 ~ simple #2) and (complex #3 ~ simple #3); the crossing links not aligned
    _saved(page, "2:2 group split in two")
    expect(page.locator(ROWS)).to_have_count(20)
    expect(_row_of(page, "simple", simple[1]).locator(".align-type")).to_have_text("1:1")
    assert (_current(simple[1], complex_[2]), _current(simple[2], complex_[1])) == ("not_aligned", "not_aligned")
    assert (_current(simple[1], complex_[1]), _current(simple[2], complex_[2])) == ("aligned", "aligned")

    page.keyboard.press("k")  # back to the row of simple #2, cursor on complex #2
    page.keyboard.press("x")  # complex #2 unaligned: its row and simple #2's are apart now
    _saved(page, "complex #2 unaligned")
    expect(page.locator(ROWS)).to_have_count(21)
    expect(_row_of(page, "complex", complex_[1]).locator(".align-type")).to_have_text("1:0")
    expect(_row_of(page, "simple", simple[1]).locator(".align-type")).to_have_text("0:1")
    expect(_row_of(page, "simple", simple[1])).to_have_class(re.compile(r"\bstatus-unaligned\b"))
    page.keyboard.press("M")  # complex #2's row merged with the previous row (group 1): a 2:1 group
    _saved(page, "merged into a 2:1 group")
    expect(_row_of(page, "complex", complex_[1]).locator(".align-type")).to_have_text("2:1")
    assert _current(simple[0], complex_[1]) == "aligned"
    page.keyboard.press("u")
    _saved(page, "Undone ✓")
    assert _current(simple[0], complex_[1]) == ""
    expect(_row_of(page, "complex", complex_[1]).locator(".align-type")).to_have_text("1:0")

    events = LabelEvent.objects.filter(project=project).count()
    page.keyboard.press("k")  # the row of simple #1: dissolved with n
    page.keyboard.press("n")
    _saved(page, "1:1 group dissolved")
    assert _current(simple[0], complex_[0]) == "not_aligned" and LabelEvent.objects.filter(project=project).count() == events + 1

    # Another tab labels simple #5 ~ complex #5 first: accepting the paragraph's suggestions (#4 and #5) stores nothing.
    anna = pair.assignments.get().annotator
    other_tab = services.label_record(
        project=project, annotator=anna, pair=pair, simple_sentence_id=simple[4], complex_sentence_id=complex_[4], label="partial",
        expected_previous=latest_event(project, anna, simple[4], complex_[4]).pk,  # its accept and undo above
    )  # fmt: skip
    page.keyboard.press("A")
    expect(page.locator("#save-status")).to_contain_text("Conflict: this pair was changed elsewhere")
    expect(page.locator("#pending")).to_contain_text("simple #5 ~ complex #5 changed elsewhere; it is now partial")
    expect(_row_of(page, "simple", simple[4])).to_have_class(re.compile(r"\bstatus-own\b"))  # the other tab's label, shown
    assert _current(simple[3], complex_[3]) == "" and LabelEvent.objects.filter(project=project).last() == other_tab
    page.locator("#pending").get_by_role("button", name="dismiss").click()
    page.keyboard.press("A")  # again: the one suggestion left
    _saved(page, "1 suggestion of paragraphs ¶1 ↔ ¶1 accepted")
    assert (_current(simple[3], complex_[3]), _current(simple[4], complex_[4])) == ("aligned", "partial")

    # A reviewer decides complex #4 ~ simple #4 is not aligned; the annotator's suggested link there is marked.
    services.adjudicate(
        project=project, reviewer=owner, pair=pair, simple_sentence_id=simple[3], complex_sentence_id=complex_[3],
        label="not_aligned", expected_previous=None,
    )  # fmt: skip
    page.reload()
    expect(page.locator("#alignment-view")).to_be_visible()  # the view is remembered
    conflict = _row_of(page, "simple", simple[3])
    expect(conflict).to_have_class(re.compile(r"\bhas-conflict\b"))
    expect(conflict.locator(".badge.conflict")).to_contain_text("reviewer: 4↔4 not aligned")
    expect(page.locator(f"{ROWS}.has-conflict")).to_have_count(1)
    for _ in range(4):  # rows: complex #1, complex #2, simple #1, simple #2, then the group of #3
        page.keyboard.press("j")
    page.keyboard.press("M")  # simple #2 joins complex #3 and simple #3: a 1:2 group
    _saved(page, "merged into a 1:2 group")
    expect(_row_of(page, "simple", simple[1]).locator(".align-type")).to_have_text("1:2")
    assert _current(simple[1], complex_[2]) == "aligned"
    page.keyboard.press("j")  # to the row the reviewer decided otherwise
    expect(conflict).to_have_class(re.compile(r"\bcurrent\b"))
    page.locator("#alignment-view").evaluate("view => window.scrollTo(0, view.getBoundingClientRect().top + window.scrollY - 8)")
    shot(page, "screenshot-alignment-view.png")  # unaligned sentences, your groups, suggestions and a reviewer's decision

    page.keyboard.press("?")  # the keys of both views, from the one key table
    expect(page.locator("#help")).to_contain_text("merge the row with the next / previous row")
    page.keyboard.press("Escape")
    page.keyboard.press("v")  # back to the focus view, on the row's simple sentence
    expect(page.locator("#annotate .annotate-docs")).to_be_visible()
    assert CandidateAlignment.objects.filter(run=run).exists()  # suggestions untouched: labels live in LabelEvent only


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_the_focused_pair_and_the_current_row_stay_on_screen_while_moving(page: Page, live_server, twenty_sentence_pair, width, height):
    project, pair, run = twenty_sentence_pair
    page.set_viewport_size({"width": width, "height": height})
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    best = _best_suggestions(run, pair)

    def on_screen(selector: str) -> bool:
        box = page.locator(selector).bounding_box()
        return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height

    for index, simple_id in enumerate(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True)):
        page.keyboard.press("j")
        expect(page.locator(f"#s-{simple_id}")).to_have_class(re.compile(r"\bselected\b"))
        assert on_screen(f"#s-{simple_id}") and on_screen(f"#c-{best[simple_id]}"), f"after j #{index + 1}"
    for _ in range(5):
        page.keyboard.press("k")
    page.keyboard.press("v")
    for _ in range(10):
        page.keyboard.press("j")
        assert on_screen(f"{ROWS}.current")
