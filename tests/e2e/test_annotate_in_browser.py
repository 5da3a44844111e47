"""An annotator labels a document pair in a real browser: keyboard, undo, unproposed links, saving, conflicts."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import Assignment, LabelEvent
from tests.annotation.conftest import lexical_run
from tests.e2e.shots import shot

ADV = (
    "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n\n"
    "A hive can hold fifty thousand bees in summer.\nThe queen lays up to two thousand eggs a day.\n\n"
    "Beekeepers harvest the honey in late summer.\nThey leave enough honey for the bees to survive the winter.\n"
)
ELE = (
    "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n\n"
    "Many bees live in one hive.\nThe queen lays many eggs.\n\n"
    "People take the honey in summer.\nThey leave some honey for the bees.\n"
)


@pytest.fixture
def annotation_setup(transactional_db, owner, monkeypatch):
    """A project over one aligned pair, assigned to the annotator "anna"; returns (project, pair, run)."""
    corpus, _ = corpus_get_or_create(name="Bees", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = lexical_run(corpus, monkeypatch)
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="Bees gold", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return project, DocumentPair.objects.get(corpus=corpus), run


def _login(page: Page, live_server, username: str, password: str) -> None:
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/accounts/login/"))


def _screen_url(live_server, project, pair) -> str:
    return f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/"


def _best_suggestion(run, simple_id: int) -> CandidateAlignment:
    """What j focuses: the simple sentence's best-scored candidate that the aligner predicted aligned or partial."""
    return (
        CandidateAlignment.objects.filter(run=run, simple_sentence_id=simple_id, label__in=["aligned", "partial"])
        .order_by("-score")
        .first()
    )


def _latest(simple_id: int, complex_id: int) -> LabelEvent | None:
    return LabelEvent.objects.filter(simple_sentence_id=simple_id, complex_sentence_id=complex_id).order_by("-pk").first()


def test_annotator_labels_with_the_keyboard_undoes_links_an_unproposed_pair_and_labels_persist(
    page: Page, live_server, annotation_setup, outsider
):
    """Long because it is one user story end to end; split into steps, each would only hand the same state on."""
    project, pair, run = annotation_setup
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    first_candidate = _best_suggestion(run, simple[0].pk)
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads

    page.keyboard.press("j")  # selects the first simple sentence and focuses its best suggestion
    expect(page.locator(f"#s-{simple[0].pk}")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#annotate .complex-sentence.candidate")).not_to_have_count(0)
    current = page.locator(f"#c-{first_candidate.complex_sentence_id}")
    expect(current).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator("#diff h2")).to_contain_text(f"Simple #1 ~ complex #{first_candidate.complex_sentence.index + 1}")
    expect(page.locator("#diff del").first).to_be_visible()
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    expect(current).to_have_class(re.compile(r"\bown-aligned\b"))
    expect(page.locator("#progress-count")).to_have_text(f"1 / {len(simple)}")
    event = _latest(simple[0].pk, first_candidate.complex_sentence_id)
    assert event.new_label == "aligned" and event.seconds_spent is not None and event.seconds_spent >= 0

    page.keyboard.press("u")
    expect(page.locator("#save-status")).to_contain_text("Undone")
    expect(current).not_to_have_class(re.compile(r"\bown-aligned\b"))
    expect(page.locator("#progress-count")).to_have_text(f"0 / {len(simple)}")
    assert _latest(simple[0].pk, first_candidate.complex_sentence_id).source == LabelEvent.Source.UNDO
    page.keyboard.press("a")  # after the undo, the next write names the undo event: no conflict
    expect(page.locator("#save-status")).to_contain_text("Saved")
    expect(current).to_have_class(re.compile(r"\bown-aligned\b"))

    # Link a pair the aligner never proposed: simple #2 with a complex sentence no candidate names.
    proposed = set(CandidateAlignment.objects.filter(run=run, simple_sentence=simple[1]).values_list("complex_sentence_id", flat=True))
    unproposed = next(sentence for sentence in reversed(complex_) if sentence.pk not in proposed)
    page.get_by_role("button", name=re.compile(r"↓ Sentence")).click()  # the mouse equivalent of j
    expect(page.locator(f"#s-{simple[1].pk}")).to_have_class(re.compile(r"\bselected\b"))
    page.locator(f"#c-{unproposed.pk} .sent-text").click()
    expect(page.locator("#current-pair")).to_contain_text("not proposed by the aligner")
    page.keyboard.press("p")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert _latest(simple[1].pk, unproposed.pk).new_label == "partial"
    expect(page.locator("#progress-count")).to_have_text(f"2 / {len(simple)}")

    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text("undo your last change in this pair")
    page.set_viewport_size({"width": 1280, "height": 600})  # a laptop screen: the box scrolls, its title and Close stay on it
    box = page.locator("#help .help-box").bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 600, box
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert page.evaluate("window.__sameDocument") is True  # no full-page reload so far
    page.get_by_role("button", name="Done · next pair").click()
    expect(page.locator("#finish-box")).to_contain_text(f"{len(simple) - 2} of {len(simple)} simple sentences have no label of yours")
    page.get_by_role("button", name="Mark done and open the next pair").click()  # anna's only pair: on to My tasks, which says so
    expect(page).to_have_url(re.compile(r"/annotate/tasks/$"))
    expect(page.locator(".messages")).to_contain_text("That was your last open pair")
    assert Assignment.objects.get(project=project, pair=pair).completed_at is not None

    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#done-box")).to_contain_text("Marked done")
    page.keyboard.press("j")
    expect(current).to_have_class(re.compile(r"\bown-aligned\b"))
    page.locator(f"#s-{simple[1].pk} .sent-text").click()
    expect(page.locator(f"#c-{unproposed.pk}")).to_have_class(re.compile(r"\bown-partial\b"))
    expect(page.locator(f"#c-{unproposed.pk}")).to_contain_text("you: partial")
    page.keyboard.press("l")
    expect(page.locator("#diff h2")).to_contain_text("Simple #2 ~ complex #")
    shot(page, "screenshot-annotate.png", full_page=True)

    page.context.clear_cookies()
    _login(page, live_server, "outsider", "outsider-pass-123")
    response = page.goto(_screen_url(live_server, project, pair))
    assert response is not None and response.status == 404


def test_a_failed_save_is_retried_and_a_second_tab_conflict_is_shown(page: Page, live_server, annotation_setup):
    project, pair, run = annotation_setup
    first_candidate = _best_suggestion(run, pair.simple_document.sentences.get(index=0).pk)
    _login(page, live_server, "anna", "anna-pass-123")
    url = _screen_url(live_server, project, pair)
    page.goto(url)
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    # The network is down: the browser's own offline mode. A route that aborted the saves let one through once under
    # the full suite's load (the save showed "Saved"); the offline mode needs no handler in this process.
    page.context.set_offline(True)
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Save failed — retrying")
    expect(page.locator("#pending")).to_contain_text("→ aligned")
    assert LabelEvent.objects.count() == 0
    page.context.set_offline(False)  # back online: the retry goes through on its own
    expect(page.locator("#save-status")).to_contain_text("Saved", timeout=10_000)
    expect(page.locator("#pending")).to_be_hidden()
    assert LabelEvent.objects.get().new_label == "aligned"

    other_tab = page.context.new_page()
    other_tab.goto(url)
    other_tab.keyboard.press("j")
    other_tab.keyboard.press("n")
    expect(other_tab.locator("#save-status")).to_contain_text("Saved")

    page.keyboard.press("p")  # this tab still shows "aligned": refused, with the label the other tab wrote
    expect(page.locator("#save-status")).to_contain_text("Conflict: this pair was changed elsewhere")
    expect(page.locator("#pending")).to_contain_text("it is now not aligned")
    expect(page.locator(f"#c-{first_candidate.complex_sentence_id}")).to_have_class(re.compile(r"\bown-not_aligned\b"))
    assert _latest(first_candidate.simple_sentence_id, first_candidate.complex_sentence_id).new_label == "not_aligned"
    page.keyboard.press("p")  # pressed again, it builds on the current label and wins visibly
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert _latest(first_candidate.simple_sentence_id, first_candidate.complex_sentence_id).new_label == "partial"
