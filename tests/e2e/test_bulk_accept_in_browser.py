"""Bulk accept in Chromium: B asks first (how many labels, the estimated precision), Esc stores nothing, Enter stores
them all as one edit with source ``bulk``, J goes to the sentences left open, and one u takes the whole edit back."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation import services
from annotation.labelling import bulk, bulk_estimate
from annotation.models import LabelEvent
from tests.annotation.conftest import label_now
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url, annotation_setup  # noqa: F401 - a fixture


def _answered_by_two(project, pair, run) -> list[CandidateAlignment]:
    """Two more annotators accepted every suggestion of the pair and marked it done: the project's answers."""
    suggested = list(CandidateAlignment.objects.filter(run=run, pair=pair, label__in=("aligned", "partial")))
    for name in ("ben", "cid"):
        user = get_user_model().objects.create_user(name, password=f"{name}-pass-123")
        services.membership_set(project=project, user=user, role="annotator")
        services.assignment_create(project=project, pair=pair, annotator=user)
        for candidate in suggested:
            label_now(project, user, pair, candidate.simple_sentence_id, candidate.complex_sentence_id, candidate.label)
        services.assignment_complete(project=project, annotator=user, pair=pair)
    return suggested


def _manager_finds_them(page: Page, live_server, project, pair, count: int) -> None:
    """The project page's card counts the bulk labels and links the pair's review, filtered to them and marked."""
    page.context.clear_cookies()
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    card = page.locator("#bulk")
    expect(card).to_contain_text(f"{2 * count} labels bulk accepted in 1 pair")
    shot(card, "bulk-accept-project-card.png")
    card.get_by_role("link", name=pair.complex_document.title).click()
    expect(page).to_have_url(re.compile(r"show=bulk"))
    expect(page.locator("#review tbody tr .bulk-mark")).to_have_count(count)
    expect(page.locator("#review tbody tr[data-row]")).to_have_count(count)
    shot(page, "bulk-accept-review.png", full_page=True)


def test_bulk_accept_asks_stores_one_edit_and_one_undo_takes_it_back(page: Page, live_server, annotation_setup, monkeypatch) -> None:
    project, pair, run = annotation_setup
    monkeypatch.setattr(bulk_estimate, "MIN_ANSWERED", 2)  # a small pair: two annotators' answers are enough here
    bulk.bulk_target_set(project, "0.8")
    suggested = _answered_by_two(project, pair, run)
    offer = bulk.bulk_offer(project)
    assert offer.estimate is not None
    expected = {(c.simple_sentence_id, c.complex_sentence_id) for c in suggested}  # the Bees run's suggestions are all sure

    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#bulk-offer")).to_contain_text(f"confidence ≥ {offer.estimate.threshold:.2f}")
    page.keyboard.press("B")
    box = page.locator("#bulk-box")
    expect(box).to_be_visible()
    expect(page.locator("#bulk-estimate")).to_contain_text(f"{offer.estimate.precision:.3f}")
    shot(page, "bulk-accept-dialog.png")
    count = int(re.match(r"(\d+) suggestion", page.locator("#bulk-count").inner_text()).group(1))
    assert 0 < count <= len(expected)
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    assert not LabelEvent.objects.filter(annotator__username="anna").exists()

    page.keyboard.press("B")
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_contain_text("bulk accepted")
    made = LabelEvent.objects.filter(annotator__username="anna")
    assert made.count() == count and set(made.values_list("source", flat=True)) == {"bulk"}
    assert {(e.simple_sentence_id, e.complex_sentence_id) for e in made} <= expected
    assert {e.suggestion["bulk"]["threshold"] for e in made} == {offer.estimate.threshold}

    labelled = {e.simple_sentence_id for e in made}
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    open_ones = [pk for pk in simple if pk not in labelled]
    page.keyboard.press("J")  # the first simple sentence with no label of anna's
    if open_ones:
        expect(page.locator(f"#s-{open_ones[0]}")).to_have_class(re.compile(r"\bselected\b"))
    else:
        expect(page.locator("#save-status")).to_contain_text("without a label of yours")

    page.keyboard.press("u")
    expect(page.locator("#save-status")).to_contain_text(f"Undone ✓ the last edit ({count} sentence pairs)")
    current = {
        (e.simple_sentence_id, e.complex_sentence_id): e.new_label
        for e in LabelEvent.objects.filter(annotator__username="anna").order_by("pk")
    }
    assert set(current.values()) == {""}
    page.keyboard.press("B")  # again, to leave bulk labels for the reviewer
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_contain_text("bulk accepted")

    _manager_finds_them(page, live_server, project, pair, count)


def _anna_on_the_screen(page: Page, live_server, annotation_setup, monkeypatch) -> None:
    """Bulk accept offered on the tram pair (two annotators' answers suffice here) and anna on its screen."""
    project, pair, run = annotation_setup
    monkeypatch.setattr(bulk_estimate, "MIN_ANSWERED", 2)
    bulk.bulk_target_set(project, "0.8")
    _answered_by_two(project, pair, run)
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))


def test_bulk_accept_can_keep_to_the_current_paragraph_row(page: Page, live_server, annotation_setup, monkeypatch) -> None:
    _anna_on_the_screen(page, live_server, annotation_setup, monkeypatch)
    page.keyboard.press("j")  # the first simple sentence: its paragraph row is the first
    page.keyboard.press("B")
    only = page.locator("#bulk-paragraph")
    expect(only).to_be_visible()
    whole = int(re.match(r"(\d+) suggestion", page.locator("#bulk-count").inner_text()).group(1))
    in_row = int(re.search(r": (\d+) suggestion", only.inner_text()).group(1))
    assert 0 < in_row < whole
    only.click()
    expect(page.locator("#save-status")).to_contain_text("of paragraphs ¶1 ↔ ¶1 at confidence")
    made = LabelEvent.objects.filter(annotator__username="anna")
    assert made.count() == in_row and set(made.values_list("source", flat=True)) == {"bulk"}
    assert {e.simple_sentence.paragraph.index for e in made} == {0}


def test_a_double_enter_on_the_dialog_accepts_nothing_more(page: Page, live_server, annotation_setup, monkeypatch) -> None:
    """The second Enter of a double press (or a held one) used to reach the screen once the dialog closed, and accept
    the current pair's suggestion as well: the undo that follows now takes back the bulk edit, not that label."""
    _anna_on_the_screen(page, live_server, annotation_setup, monkeypatch)
    page.keyboard.press("j")  # a current pair, which Enter would accept
    page.keyboard.press("B")
    expect(page.locator("#bulk-box")).to_be_visible()
    count = int(re.match(r"(\d+) suggestion", page.locator("#bulk-count").inner_text()).group(1))
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    expect(page.locator("#save-status")).to_contain_text("bulk accepted")
    page.keyboard.press("u")  # saved after anything the second Enter queued
    expect(page.locator("#save-status")).to_contain_text(f"Undone ✓ the last edit ({count} sentence pairs)")
    made = LabelEvent.objects.filter(annotator__username="anna").exclude(source="undo")
    assert set(made.values_list("source", flat=True)) == {"bulk"} and made.count() == count  # no label of the current pair
