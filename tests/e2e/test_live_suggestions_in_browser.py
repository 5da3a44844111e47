"""Suggestions that learn while the annotator labels, in Chromium: one label re-decodes the rest of the pair, a neighbour's
suggestion changes on the screen without a reload, the labelled sentence stays as labelled, and the next label records that
it was made on a refreshed suggestion; a refresh answered 429 (busy) is asked again after its Retry-After, silently, and
an undo puts back the run's own suggestion, on which a label is recorded as made on the stored suggestions."""

from __future__ import annotations

import json
import re
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation.models import LabelEvent
from tests.annotation.labelling.test_refresh import lighthouse_project
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url


def _stored_best(run, simple_id: int) -> int:
    return (
        CandidateAlignment.objects.filter(run=run, simple_sentence_id=simple_id, label__in=["aligned", "partial"])
        .order_by("-score")
        .values_list("complex_sentence_id", flat=True)
        .first()
    )


def test_one_label_changes_a_neighbours_suggestion_on_the_screen_and_nothing_labelled_moves(
    page: Page, live_server, transactional_db, owner, monkeypatch
):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project, pair, simple, complex_ = lighthouse_project(owner, [anna], settings.ALIGNER_MODEL_DIR)
    stored = _stored_best(project.suggestion_run, simple[1])
    # The complex text tells the story twice: link simple #1 to the copy the run did not pick for simple #2.
    first, expected = (complex_[3], complex_[4]) if stored in (complex_[0], complex_[1]) else (complex_[0], complex_[1])
    assert stored != expected

    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate")).to_have_attribute("data-ready", "true")
    page.keyboard.press("j")  # simple #1
    page.locator(f"#c-{first}").click()
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")

    expect(page.locator("#suggest-status")).to_contain_text("from your 1 labelled sentence: 1 changed")
    expect(page.locator(f"#s-{simple[1]}")).to_have_class(re.compile(r"\bsuggestion-changed\b"))
    expect(page.locator(f"#s-{simple[1]} .badge.suggest-changed")).to_have_text("↻ new suggestion")
    shot(page, "live_suggestions.png")
    expect(page.locator(f"#s-{simple[0]} .badge.own-count")).to_contain_text(f"✓ ↔ {complex_.index(first) + 1}")  # as labelled

    page.keyboard.press("j")  # simple #2: its best suggestion is now the refreshed one
    expect(page.locator(f"#c-{expected}")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    expect(page.locator("#pending")).to_be_hidden()

    events = list(LabelEvent.objects.filter(project=project).order_by("pk"))
    assert [(e.simple_sentence_id, e.complex_sentence_id, e.new_label) for e in events] == [
        (simple[0], first, "aligned"), (simple[1], expected, "aligned"),
    ]  # fmt: skip
    assert [e.suggestion["kind"] for e in events] == ["stored", "refreshed"]
    assert _stored_best(project.suggestion_run, simple[1]) == stored  # the run's stored suggestions stay as they were


SUGGEST_URL = re.compile(r"/suggestions/(\?.*)?$")


def test_a_refresh_answered_429_is_asked_again_after_retry_after_silently_and_an_undo_brings_back_the_runs_suggestion(
    page: Page, live_server, transactional_db, owner, monkeypatch
):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project, pair, simple, complex_ = lighthouse_project(owner, [anna], settings.ALIGNER_MODEL_DIR)
    stored = _stored_best(project.suggestion_run, simple[1])
    first = complex_[3] if stored in (complex_[0], complex_[1]) else complex_[0]  # the other telling: simple #2 follows
    asked: list[str] = []

    def busy_once(route) -> None:
        asked.append(route.request.url)
        if len(asked) == 1:  # another refresh of hers is running: the server says when to come back
            body = json.dumps({"error": "A refresh of your suggestions is still running.", "retry_after": 2})
            route.fulfill(status=429, headers={"Retry-After": "2"}, content_type="application/json", body=body)
        else:
            route.continue_()

    _login(page, live_server, "anna", "anna-pass-123")
    page.route(SUGGEST_URL, busy_once)
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate")).to_have_attribute("data-ready", "true")
    page.keyboard.press("j")  # simple #1
    page.locator(f"#c-{first}").click()
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert len(asked) == 1, "the screen never asked for a refresh"
    assert "suggestion-changed" not in (page.locator(f"#s-{simple[1]}").get_attribute("class") or "")  # kept as it was
    assert "not refreshed" not in page.locator("#suggest-status").inner_text()  # and nothing said: a pause, not an error

    expect(page.locator("#suggest-status")).to_contain_text("from your 1 labelled sentence: 1 changed")  # asked again
    assert len(asked) == 2 and "?" not in asked[1], asked
    expect(page.locator(f"#s-{simple[1]} .badge.suggest-changed")).to_have_text("↻ new suggestion")

    page.keyboard.press("u")  # the label is taken back: no label reaches simple #2, the run's suggestion comes back
    expect(page.locator("#save-status")).to_contain_text("Undone ✓")
    expect(page.locator("#suggest-status")).to_contain_text("from your 0 labelled sentences: none changed")
    expect(page.locator(f"#s-{simple[1]} .badge.suggest-changed")).to_have_count(0)  # the run's own again: no ↻ mark
    page.keyboard.press("j")  # simple #2
    expect(page.locator(f"#c-{stored}")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    events = list(LabelEvent.objects.filter(project=project).order_by("pk"))
    assert [(e.simple_sentence_id, e.complex_sentence_id, e.new_label, e.suggestion["kind"]) for e in events] == [
        (simple[0], first, "aligned", "stored"), (simple[0], first, "", "stored"), (simple[1], stored, "aligned", "stored"),
    ]  # fmt: skip
