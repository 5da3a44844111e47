"""Step 1 of the procedure by keyboard, in Chromium: P opens the paragraph check from the screen, the arrows (or h/j/k/l)
move between cells, x ticks, Enter saves and goes back; the paragraphs are shown in full, never truncated."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from annotation.models import ParagraphCorrection
from tests.e2e.test_annotate_in_browser import _login, _screen_url
from tests.e2e.test_keyboard_flow_in_browser import COMPLEX, SIMPLE, twenty_sentence_pair  # noqa: F401 - a fixture


def test_the_paragraph_check_is_done_with_keys_and_shows_whole_paragraphs(page: Page, live_server, twenty_sentence_pair):
    project, pair, _run = twenty_sentence_pair
    page.set_viewport_size({"width": 1280, "height": 720})
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    page.keyboard.press("P")
    expect(page).to_have_url(re.compile(r"/paragraphs/$"))
    first_cell = page.locator('input[name="link"][value="0:0"]')
    expect(first_cell).to_be_focused()  # keys work at once
    expect(first_cell).to_be_checked()  # what the aligner found: ¶k with ¶k
    last_sentence = COMPLEX[0][-1]  # the end of a 5-sentence paragraph: nothing is cut off
    expect(page.locator("#complex-head-0")).to_contain_text(last_sentence)
    expect(page.locator("#paragraph-compare [data-complex='0']")).to_contain_text(last_sentence)
    expect(page.locator("#paragraph-compare [data-simple='0']")).to_contain_text(SIMPLE[0][-1])
    expect(page.locator("#paragraph-compare")).not_to_contain_text("…")

    page.keyboard.press("ArrowDown")  # complex ¶2
    page.keyboard.press("l")  # simple ¶2
    expect(page.locator('input[name="link"][value="1:1"]')).to_be_focused()
    page.keyboard.press("h")  # simple ¶1: the two paragraphs of this cell are shown in full
    expect(page.locator("#paragraph-compare [data-complex='1']")).to_contain_text(COMPLEX[1][-1])
    expect(page.locator("#paragraph-compare [data-simple='0']")).to_be_visible()
    expect(page.locator("#paragraph-compare [data-simple='1']")).to_be_hidden()
    page.keyboard.press("x")  # complex ¶2 shares content with simple ¶1 too (in this story)
    expect(page.locator('input[name="link"][value="1:0"]')).to_be_checked()
    page.keyboard.press("Enter")  # saved, back to the sentences
    expect(page).to_have_url(re.compile(rf"/pairs/{pair.pk}/$"))
    expect(page.locator(".messages")).to_contain_text("Paragraph alignment saved")
    groups = ParagraphCorrection.objects.get(project=project, pair=pair).groups
    assert [[0, 1], [0, 1]] in groups and [[2], [2]] in groups and [[3], [3]] in groups

    page.keyboard.press("P")
    expect(page).to_have_url(re.compile(r"/paragraphs/$"))
    page.keyboard.press("Escape")  # back without saving
    expect(page).to_have_url(re.compile(rf"/pairs/{pair.pk}/$"))
    assert ParagraphCorrection.objects.filter(project=project, pair=pair).count() == 1
