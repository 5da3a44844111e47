"""Every way of accepting a suggestion on the screen stores the label as one (``source: suggestion``), in Chromium.

Enter in the focus view stored ``human`` before (all 20 such labels of a test project), while the alignment view's
accept stored ``suggestion``; exports carried the wrong value. Labelling the suggested pair with ``a`` is the
annotator's own judgement and stays ``human``; A (every suggestion of the paragraph row) stores ``suggestion``.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from annotation.models import LabelEvent
from tests.e2e.test_annotate_in_browser import _best_suggestion, _login, _screen_url, annotation_setup  # noqa: F401 - a fixture


def test_enter_and_A_store_suggestion_and_a_stores_human(page: Page, live_server, annotation_setup) -> None:
    project, pair, run = annotation_setup
    simple = list(pair.simple_document.sentences.order_by("index"))
    first, second = (_best_suggestion(run, sentence.pk) for sentence in simple[:2])
    assert first is not None and second is not None
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.keyboard.press("j")  # simple #1 with its best suggestion focused
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    accepted = LabelEvent.objects.get(simple_sentence_id=simple[0].pk, complex_sentence_id=first.complex_sentence_id)
    assert (accepted.new_label, accepted.source) == (first.label, "suggestion")

    page.keyboard.press("j")  # simple #2: the same suggested pair, labelled by hand
    expect(page.locator(f"#s-{simple[1].pk}")).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    own = LabelEvent.objects.get(simple_sentence_id=simple[1].pk, complex_sentence_id=second.complex_sentence_id)
    assert (own.new_label, own.source) == ("aligned", "human")

    before = set(LabelEvent.objects.values_list("pk", flat=True))
    page.keyboard.press("A")  # the rest of the paragraph row's suggestions, in one edit
    expect(page.locator("#save-status")).to_contain_text("Saved")
    made = LabelEvent.objects.exclude(pk__in=before)
    assert made.exists() and set(made.values_list("source", flat=True)) == {"suggestion"}

    page.reload()  # what the screen shows after a reload is what was stored
    expect(page.locator("#save-status")).not_to_contain_text("unsent")
    assert LabelEvent.objects.filter(source="human").count() == 1
