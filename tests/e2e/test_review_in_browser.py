"""The review page in Chromium at 1280 × 720: three annotators' labels in a table that fits its card, their flags and
comments on the pair, and the word diff of the focused row, following j/k and clicks without a reload."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation import services
from tests.annotation.conftest import label_now, tram_project
from tests.e2e.shots import shot
from tests.e2e.test_project_setup_in_browser import _login

# (simple, complex) -> anna's, ben's and cleo's label (None: not labelled yet)
LABELS = {
    (0, 0): ("aligned", "partial", "aligned"),
    (1, 1): ("aligned", "not_aligned", None),
    (2, 2): ("partial", "aligned", "not_aligned"),
    (4, 4): ("not_aligned", "aligned", "partial"),
}


@pytest.fixture
def three_annotators(transactional_db, tram_corpus, owner):
    users = get_user_model().objects
    team = [users.create_user(name, password=f"{name}-pass-123") for name in ("anna", "ben", "cleo")]
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, team, "Trams")
    for (s, c), labels in LABELS.items():
        for user, label in zip(team, labels, strict=True):
            if label:
                label_now(project, user, pair, simple[s], complex_[c], label)
    anna, ben, _ = team
    services.item_event_record(project=project, annotator=anna, pair=pair, kind="flag")
    services.item_event_record(project=project, annotator=anna, pair=pair, kind="comment", text="Is #3 a paraphrase or new content?")
    services.item_event_record(
        project=project, annotator=ben, pair=pair, kind="comment", text="I read 'tram line' as partial here.",
        simple_sentence_id=simple[0], complex_sentence_id=complex_[0],
    )  # fmt: skip
    return project, pair, simple, complex_


def test_the_review_page_shows_notes_and_the_focused_rows_diff_and_fits_at_1280(page: Page, live_server, three_annotators) -> None:
    project, pair, simple, complex_ = three_annotators
    page.set_viewport_size({"width": 1280, "height": 720})
    _login(page, live_server.url, "owner", "owner-pass-123")
    url = f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/"
    page.goto(url)

    notes = page.locator("#notes li")
    expect(notes).to_have_count(3)
    expect(notes.nth(0)).to_contain_text("⚑ flagged anna on the pair")
    expect(notes.nth(1)).to_contain_text("comment anna on the pair")
    expect(notes.nth(1).locator("q")).to_have_text("Is #3 a paraphrase or new content?")
    expect(notes.nth(2)).to_contain_text("comment ben on simple #1 ~ complex #1")
    first_row = page.locator(f"#review-{simple[0]}-{complex_[0]}")
    expect(first_row.locator(".note-mark")).to_have_text("⚑ 1")  # the row ben commented on

    diff = page.locator("#review-diff")
    expect(page.locator("#review tr.focused")).to_have_id(f"review-{simple[0]}-{complex_[0]}")
    expect(diff.locator("h2")).to_have_text("Simple #1 ~ complex #1")
    expect(diff.locator("#diff-complex del").first).to_contain_text("council")  # dropped from the complex sentence
    page.keyboard.press("j")
    expect(diff.locator("h2")).to_have_text("Simple #2 ~ complex #2")  # the diff follows the focused row
    expect(diff.locator("#diff-simple")).to_contain_text("It will go from the harbour to the university.")
    shot(page, "screenshot-review.png", full_page=True)
    page.locator(f"#review-{simple[4]}-{complex_[4]} [data-diff-link]").click()
    expect(diff.locator("h2")).to_have_text("Simple #5 ~ complex #5")
    expect(page.locator("#review tr.focused")).to_have_id(f"review-{simple[4]}-{complex_[4]}")
    assert page.url == url  # htmx swapped the card; no page load

    for table in ("#review", "#curation table"):  # the decisions and the side-by-side view each fit their card
        fit = page.evaluate(
            """(selector) => { const table = document.querySelector(selector), card = table.closest(".card");
            const inner = card.getBoundingClientRect().right - parseFloat(getComputedStyle(card).paddingRight);
            const cells = Array.from(table.querySelectorAll("td > *, th > *"), (el) => el.getBoundingClientRect().right);
            return {table: Math.max(table.getBoundingClientRect().right, ...cells), inner, overflow: card.scrollWidth - card.clientWidth}; }""",
            table,
        )
        assert fit["table"] <= fit["inner"] + 0.5 and fit["overflow"] <= 0, (table, fit)
    expect(page.locator("#review th.annotator-head")).to_have_count(3)


def test_without_javascript_a_rows_number_opens_the_page_with_its_diff(browser, live_server, three_annotators) -> None:
    project, pair, simple, complex_ = three_annotators
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 720})
    page = context.new_page()
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    page.locator(f"#review-{simple[2]}-{complex_[2]} [data-diff-link]").click()
    expect(page.locator("#review-diff h2")).to_have_text("Simple #3 ~ complex #3")
    assert f"simple={simple[2]}" in page.url
    context.close()


def test_a_long_annotator_name_wraps_in_the_header_and_keeps_its_key_in_sight(page: Page, live_server, three_annotators) -> None:
    project, pair, _simple, _complex = three_annotators
    get_user_model().objects.filter(username="anna").update(username="annemarie.vandenberg-schneider")
    page.set_viewport_size({"width": 1280, "height": 720})
    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    head = page.locator("#review th.annotator-head").first
    expect(head).to_contain_text("annemarie.vandenberg-schneider")
    cut = head.evaluate("(th) => th.scrollWidth > th.clientWidth")
    cell, key = head.bounding_box(), head.locator("kbd").bounding_box()
    assert not cut  # the whole name shows: it wraps instead of ending in an ellipsis
    assert key is not None and cell["x"] <= key["x"] and key["x"] + key["width"] <= cell["x"] + cell["width"] + 0.5  # key 1 in sight
