"""Queue mode in Chromium: the card's article, suggestion, score and count; keyed answers, skip, undo that brings the item back, help."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation.models import ItemEvent, LabelEvent
from tests.e2e.ready import QUEUE, settled
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login
from tests.e2e.test_keyboard_flow_in_browser import twenty_sentence_pair  # noqa: F401 - a fixture


@pytest.fixture
def queue_project(twenty_sentence_pair):
    project, pair, run = twenty_sentence_pair
    project.test_item_rate = 0.0  # candidates only: the test knows what comes next
    project.save()
    return project, pair, run


def _shown(page: Page) -> int:
    """The candidate on the card (the id its form sends)."""
    return int(page.locator('#queue-form input[name="item_id"]').get_attribute("value"))


def test_queue_card_shows_context_and_suggestion_and_undo_brings_the_item_back(page: Page, live_server, queue_project):
    project, pair, run = queue_project
    total = CandidateAlignment.objects.filter(run=run).count()
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/queue/?order=disagreement")

    card = page.locator("#queue-item")
    expect(page.locator("#queue-article")).to_contain_text(pair.complex_document.title)
    expect(page.locator("#queue-left")).to_have_text(f"{total} left")
    expect(page.locator("#queue-suggestion")).to_contain_text(re.compile(r"aligner: (aligned|partial|not aligned)"))
    expect(page.locator("#queue-suggestion")).to_contain_text(re.compile(r"confidence \d\.\d{2}|not scored"))
    expect(page.locator("#queue-suggestion")).not_to_contain_text(re.compile(r"score\s+[-−]?\d"))  # no raw score
    expect(card.locator(".context")).not_to_have_count(0)  # the sentences around each one
    shot(page, "queue_card.png", full_page=True)

    first = _shown(page)
    page.evaluate("window.queueLoadedOnce = true")  # gone if a key ever submits a card natively (a whole page load)
    settled(page, QUEUE)
    page.keyboard.press("a")
    expect(page.locator("#queue-left")).to_have_text(f"{total - 1} left")
    assert _shown(page) != first
    assert LabelEvent.objects.get(project=project).new_label == "aligned"

    settled(page, QUEUE)
    page.keyboard.press("u")  # the answered item comes back on screen
    expect(page.locator(".messages")).to_contain_text("The last label was undone.")
    expect(page.locator("#queue-left")).to_have_text(f"{total} left")
    assert _shown(page) == first

    settled(page, QUEUE)
    page.keyboard.press("s")
    expect(page.locator("#queue-left")).to_have_text(f"{total - 1} left")
    assert _shown(page) != first
    skip = ItemEvent.objects.get(project=project, kind="skip")
    candidate = CandidateAlignment.objects.get(pk=first)
    assert (skip.simple_sentence_id, skip.complex_sentence_id) == (candidate.simple_sentence_id, candidate.complex_sentence_id)
    settled(page, QUEUE)
    # The card as htmx leaves it for 20 ms after its swap, before the settle binds its form: a key still goes by htmx.
    page.evaluate("""() => { const form = document.querySelector('#queue-main button[data-action="undo"]').form;
                             form.replaceWith(form.cloneNode(true)); }""")
    page.keyboard.press("u")
    expect(page.locator(".messages")).to_contain_text("The last skip was undone.")  # one note: the last one
    assert _shown(page) == first
    assert page.evaluate("window.queueLoadedOnce") is True, "a key reloaded the page instead of swapping the card"

    settled(page, QUEUE)
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text("skip this item")
    page.keyboard.press("a")  # the key list is open: no answer by accident
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert LabelEvent.objects.filter(project=project).count() == 2  # the label and its undo, nothing more
