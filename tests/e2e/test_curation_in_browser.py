"""Curation in Chromium: two annotators disagree on several rows, and a reviewer settles them all from the
keyboard (≤ 2 keys per open row), sees the side-by-side view follow, and verifies with v."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation import services
from annotation.adjudication.review import pair_item_states
from annotation.models import LabelEvent, PairVerification
from tests.annotation.conftest import label_now, tram_project
from tests.e2e.ready import REVIEW, settled
from tests.e2e.shots import shot
from tests.e2e.test_project_setup_in_browser import _login

# (simple, complex): anna's label, ben's label (None: ben has not labelled it and is still working)
LABELS = {
    (0, 0): ("aligned", "partial"),
    (1, 1): ("aligned", "not_aligned"),
    (1, 2): ("partial", None),
    (2, 2): ("partial", "aligned"),
    (3, 3): ("aligned", "aligned"),  # agreed: settled without a decision
    (4, 4): ("not_aligned", "aligned"),
}


@pytest.fixture
def disagreeing_team(transactional_db, tram_corpus, owner):
    users = get_user_model().objects
    anna, ben = users.create_user("anna", password="anna-pass-123"), users.create_user("ben", password="ben-pass-123")
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [anna, ben], "Trams")
    for (s, c), labels in LABELS.items():
        for user, label in zip((anna, ben), labels, strict=True):
            if label:
                label_now(project, user, pair, simple[s], complex_[c], label)
    return project, pair, simple, complex_


def _finals(project, pair) -> dict[tuple[int, int], str | None]:
    return {(state.simple.index, state.complex.index): state.final for state in pair_item_states(project, pair)}


def test_a_reviewer_adjudicates_every_open_row_by_keyboard(page: Page, live_server, disagreeing_team, owner) -> None:
    project, pair, _, _ = disagreeing_team
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    lead = page.locator("#review-lead")
    expect(lead).to_contain_text("4 disagreements left · 5 of 6 labelled sentence pairs still need a decision")
    rows = page.locator("#review tbody tr[data-row]")
    expect(rows).to_have_count(5)  # the agreed item is settled: not listed under "open"
    focused = page.locator("#review tr.focused")
    expect(focused).to_have_id(f"review-{pair.simple_document.sentences.get(index=0).pk}-{pair.complex_document.sentences.get(index=0).pk}")
    expect(page.locator(".curation-line.focused")).to_have_count(1)  # its side-by-side line lights up too
    settled(page, REVIEW)  # the keys are bound

    presses = 0

    def press(key: str) -> None:
        nonlocal presses
        presses += 1
        page.keyboard.press(key)

    press("j")
    expect(focused).to_have_attribute("data-simple", str(pair.simple_document.sentences.get(index=1).pk))
    press("k")
    expect(rows.nth(0)).to_have_class(re.compile(r"\bfocused\b"))
    press("1")  # (0, 0): anna's label, aligned
    expect(rows.nth(1)).to_have_class(re.compile(r"\bfocused\b"))  # on to the next open row at once
    press("2")  # (1, 1): ben's label, not aligned
    expect(lead).to_contain_text("2 disagreements left · 3 of 6")
    shot(page, "curation-keyboard.png", full_page=True)  # the README's review picture is test_review_in_browser's
    press("2")  # (1, 2): ben is still working: refused on the page, nothing sent
    expect(page.locator("#curation-status")).to_contain_text("ben has no label on simple #2 ~ complex #3 yet")
    press("p")  # (1, 2): partial
    press("a")  # (2, 2): aligned
    press("n")  # (4, 4): not aligned
    expect(lead).to_contain_text("0 of 6 labelled sentence pairs still need a decision")
    expect(page.locator("#curation .chip-open")).to_have_count(0)  # the merged column has no open chip left
    settled(page, REVIEW)  # v verifies only once no decision is on its way
    press("v")
    expect(page.locator(".messages")).to_contain_text("Pair verified: it is now gold.")
    expect(page.locator("#verified-badge")).to_be_visible()

    open_rows = 5
    assert presses <= 2 * open_rows, presses
    assert _finals(project, pair) == {
        (0, 0): "aligned",
        (1, 1): "not_aligned",
        (1, 2): "partial",
        (2, 2): "aligned",
        (3, 3): "aligned",
        (4, 4): "not_aligned",
    }
    assert LabelEvent.objects.filter(project=project, source="adjudication", annotator=owner).count() == 5
    assert PairVerification.objects.get(project=project, pair=pair).verified


def test_a_keyboard_decision_that_lost_a_race_is_shown_and_can_be_repeated(page: Page, live_server, disagreeing_team, owner) -> None:
    project, pair, simple, complex_ = disagreeing_team
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    expect(page.locator("#review tr.focused")).to_have_id(f"review-{simple[0]}-{complex_[0]}")
    settled(page, REVIEW)
    services.adjudicate(  # another reviewer, meanwhile, in another tab
        project=project, reviewer=owner, pair=pair, simple_sentence_id=simple[0], complex_sentence_id=complex_[0],
        label="partial", expected_previous=None,
    )  # fmt: skip
    page.keyboard.press("a")
    row = page.locator(f"#review-{simple[0]}-{complex_[0]}")
    expect(row.get_by_role("alert")).to_contain_text("Not saved: another reviewer set this pair to partial meanwhile")
    expect(row).to_have_class(re.compile(r"\bfocused\b"))  # focus came back to the refused row
    expect(page.locator("#curation-status")).to_contain_text("Press the key again to overwrite")
    page.keyboard.press("a")
    expect(row.locator("td[data-final]")).to_have_attribute("data-final", "aligned")  # the Final column
    assert _finals(project, pair)[(0, 0)] == "aligned"
    settled(page, REVIEW)
    page.keyboard.press("v")  # four rows are still open: nothing is sent
    expect(page.locator("#curation-status")).to_contain_text("Not verified: 4 sentence pairs are still open.")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text("take ben's label as the final one")
    shot(page, "curation-keys.png")
    page.keyboard.press("a")  # the key list is open: no decision by accident
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert LabelEvent.objects.filter(project=project, source="adjudication").count() == 2
    assert not PairVerification.objects.exists()
    shot(page, "curation-conflict.png", full_page=True)
