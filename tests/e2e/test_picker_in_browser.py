"""The candidate picker in Chromium: the current simple sentence's candidates are numbered 1-5 in the order the screen
walks them, a digit links one in one key (its suggested label, else aligned), and 0 says the sentence has no partner."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation.models import LabelEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url, annotation_setup  # noqa: F401 - a fixture


def _screen_order(run, simple_id: int) -> list[CandidateAlignment]:
    """screen.candidate_order: suggestions by score, then near misses by score (then the complex sentence's position)."""
    rows = CandidateAlignment.objects.filter(run=run, simple_sentence_id=simple_id).select_related("complex_sentence")
    return sorted(rows, key=lambda c: (c.label not in ("aligned", "partial"), -c.score, c.complex_sentence.index))


def test_digits_link_the_numbered_candidates_and_0_says_no_partner(page: Page, live_server, annotation_setup) -> None:
    project, pair, run = annotation_setup
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    order = _screen_order(run, simple[0])
    assert len(order) >= 2, order
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.keyboard.press("j")
    numbers = page.locator("#annotate .complex-sentence .pick-number")
    expect(numbers).to_have_count(min(5, len(order)))
    for k, candidate in enumerate(order[:5]):
        expect(page.locator(f"#c-{candidate.complex_sentence_id} .pick-number")).to_have_text(str(k + 1))
    shot(page, "picker-numbers.png")

    second = order[1]
    page.keyboard.press("2")  # links it, and goes on to the next simple sentence with no label
    expect(page.locator(f"#s-{simple[1]}")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#save-status")).to_contain_text("Saved")
    made = LabelEvent.objects.get(annotator__username="anna", simple_sentence_id=simple[0], complex_sentence_id=second.complex_sentence_id)
    suggested = second.label in ("aligned", "partial")
    assert (made.new_label, made.source) == ((second.label, "suggestion") if suggested else ("aligned", "human"))

    page.keyboard.press("k")
    page.keyboard.press("0")  # no partner after all: every link of the sentence, and its suggestions, not aligned
    expect(page.locator("#save-status")).to_contain_text("no partner")
    expect(page.locator(f"#s-{simple[1]}")).to_have_class(re.compile(r"\bselected\b"))
    latest = {}
    for event in LabelEvent.objects.filter(annotator__username="anna", simple_sentence_id=simple[0]).order_by("pk"):
        latest[event.complex_sentence_id] = event.new_label
    linked = {c.complex_sentence_id for c in order if c.label in ("aligned", "partial")} | {second.complex_sentence_id}
    assert linked <= set(latest) and {latest[c] for c in linked} == {"not_aligned"}
    page.keyboard.press("6")  # not bound: nothing happens
    assert LabelEvent.objects.filter(annotator__username="anna").count() == len(latest) + 1  # the 2, then the 0's edit
