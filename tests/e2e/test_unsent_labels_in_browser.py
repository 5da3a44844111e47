"""An annotator's labels survive the browser, in Chromium: a session that expires mid-pair, a reload with labels
still unsent (one of them stored by the server whose answer never came), and the Back button. Each test counts the
labels stored against the labels the annotator made: they must be equal, with nothing refused or stored twice."""

from __future__ import annotations

import re
import time
from collections import Counter
from importlib import import_module

from django.conf import settings
from django.contrib.sessions.models import Session
from playwright.sync_api import Page, expect

from annotation import services
from annotation.models import Assignment, LabelEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url
from tests.e2e.test_keyboard_flow_in_browser import twenty_sentence_pair  # noqa: F401 - a fixture, used by name

LABEL_URL = re.compile(r"/label/$")


def _label_next(page: Page, made: list[str], key: str = "a") -> None:
    """j selects the next simple sentence with its best suggestion, then ``key`` labels it: one label made."""
    page.keyboard.press("j")
    page.keyboard.press(key)
    made.append(key)


def _stored(project) -> list[LabelEvent]:
    return list(LabelEvent.objects.filter(project=project).order_by("pk"))


def _assert_stored_once(project, made: list[str]) -> None:
    stored = _stored(project)
    assert len(stored) == len(made), f"{len(made)} labels made, {len(stored)} stored"
    items = Counter((event.simple_sentence_id, event.complex_sentence_id) for event in stored)
    assert set(items.values()) == {1}, f"a label stored twice: {items}"


def _expire_session(page: Page) -> None:
    """The server forgets the browser's session, as when it expires; the browser still sends the old cookie."""
    key = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == settings.SESSION_COOKIE_NAME)
    import_module(settings.SESSION_ENGINE).SessionStore(session_key=key).delete()  # the cache and the table
    assert not Session.objects.filter(session_key=key).exists()


def _log_in_from_banner(page: Page, username: str, password: str) -> None:
    """The banner's link opens the login page in a new tab of the same browser; log in there and close it."""
    with page.context.expect_page() as opened:
        page.locator("#session-banner a").click()
    tab = opened.value
    tab.get_by_label("Username").fill(username)
    tab.get_by_label("Password").fill(password)
    tab.get_by_role("button", name="Log in").click()
    expect(tab).not_to_have_url(re.compile(r"/accounts/login/"))
    tab.close()
    page.bring_to_front()


def test_labels_made_while_signed_out_are_sent_after_logging_in_again_in_another_tab(page: Page, live_server, twenty_sentence_pair):
    project, pair, _run = twenty_sentence_pair
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    made: list[str] = []
    for _ in range(2):
        _label_next(page, made)
    expect(page.locator("#progress-count")).to_have_text("2 / 20")

    _expire_session(page)
    for _ in range(2):
        _label_next(page, made)
    banner = page.locator("#session-banner")
    expect(banner).to_contain_text("You were signed out; 2 labels are waiting.")
    expect(banner.get_by_role("link", name="Log in (opens a new tab)")).to_have_attribute("target", "_blank")
    expect(page.locator("#pending li")).to_have_count(2)
    shot(page, "annotate_signed_out.png")
    assert len(_stored(project)) == 2

    _log_in_from_banner(page, "owner", "owner-pass-123")  # the wrong account: nothing is sent as them
    expect(banner).to_contain_text("signed in as owner, not anna", timeout=10_000)
    expect(banner).to_contain_text("the 2 labels waiting here are not sent as owner")
    assert len(_stored(project)) == 2

    _log_in_from_banner(page, "anna", "anna-pass-123")
    expect(banner).to_be_hidden(timeout=10_000)
    expect(page.locator("#pending")).to_be_hidden()
    expect(page.locator("#progress-count")).to_have_text("4 / 20")
    _label_next(page, made)  # the page goes on with the new session and token
    expect(page.locator("#progress-count")).to_have_text("5 / 20")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    assert page.evaluate("window.__sameDocument") is True  # no reload
    page.keyboard.press("d")  # finishing goes through the same queue, with the token the page took
    page.keyboard.press("Enter")  # 15 sentences unlabelled: confirmed
    expect(page).to_have_url(re.compile(r"/annotate/tasks/$"))
    assert Assignment.objects.get(project=project).completed_at is not None
    _assert_stored_once(project, made)


def test_labels_unsent_at_a_reload_are_sent_by_the_next_page_and_stored_once(page: Page, live_server, twenty_sentence_pair):
    project, pair, _run = twenty_sentence_pair
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    made: list[str] = []
    _label_next(page, made)
    expect(page.locator("#progress-count")).to_have_text("1 / 20")

    network = {"mode": "lose the answer"}

    def flaky(route) -> None:
        if network["mode"] == "lose the answer":
            route.fetch()  # the server gets the label and stores it; the page never hears the answer
        route.abort()

    page.route(LABEL_URL, flaky)
    _label_next(page, made)
    expect(page.locator("#pending")).to_contain_text("no connection")
    deadline = time.monotonic() + 10
    while len(_stored(project)) < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert len(_stored(project)) == 2, "the server stored the label whose answer was lost"
    network["mode"] = "down"  # from now on nothing reaches the server
    _label_next(page, made)
    expect(page.locator("#pending li")).to_have_count(2)

    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page?": yes
    page.reload()
    expect(page.locator("#pending li")).to_have_count(2)  # the new page lists what the old one left
    assert len(_stored(project)) == 2
    page.unroute(LABEL_URL)
    expect(page.locator("#pending")).to_be_hidden(timeout=20_000)
    expect(page.locator("#progress-count")).to_have_text("3 / 20")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    _assert_stored_once(project, made)
    assert page.evaluate("Object.keys(localStorage).filter((key) => key.startsWith('annotate-unsent'))") == []


def test_after_back_the_next_label_builds_on_the_annotators_own_earlier_saves(page: Page, live_server, twenty_sentence_pair):
    project, pair, _run = twenty_sentence_pair
    first_simple = pair.simple_document.sentences.get(index=0).pk
    url = _screen_url(live_server, project, pair)
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(url)
    made: list[str] = []

    def label_first(key: str) -> None:
        page.locator(f"#s-{first_simple} .sent-text").click()  # its best suggestion becomes the current pair
        page.keyboard.press(key)
        made.append(key)
        expect(page.locator("#save-status")).to_contain_text("Saved ✓")
        expect(page.locator("#pending")).to_be_hidden()

    label_first("a")
    page.locator("nav.crumbs a", has_text=project.name).click()  # another page
    expect(page).to_have_url(re.compile(rf"/annotate/projects/{project.pk}/$"))
    page.go_back()
    label_first("n")  # the page read the label saved before it was left: no conflict

    page.locator("nav.crumbs a", has_text=project.name).click()
    page.locator(f'main a[href="/annotate/projects/{project.pk}/pairs/{pair.pk}/"]').click()  # the same pair again: a label there ...
    label_first("p")
    page.go_back()
    page.go_back()  # ... is not on the page that Back brings back until it reads the labels again
    expect(page).to_have_url(url)
    label_first("a")
    stored = [event.new_label for event in _stored(project)]
    assert len(stored) == len(made) and stored == ["aligned", "not_aligned", "partial", "aligned"]


def test_a_page_restored_from_the_back_forward_cache_reads_its_labels_before_the_next_save(page: Page, live_server, twenty_sentence_pair):
    """The Chromium these tests drive never restores a page from the back-forward cache (the Back test above gets a
    new page), so this one sends the page the event such a restore fires (``pageshow`` with ``persisted``), after
    its label was changed by another page of the same annotator, as happens while a cached page waits."""
    project, pair, _run = twenty_sentence_pair
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    made: list[str] = []
    _label_next(page, made)
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    first = _stored(project)[0]
    services.label_record(
        project=project, annotator=first.annotator, pair=pair, simple_sentence_id=first.simple_sentence_id,
        complex_sentence_id=first.complex_sentence_id, label="partial", expected_previous=first.pk,
    )  # fmt: skip
    made.append("p")

    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")
    expect(page.locator(f"#c-{first.complex_sentence_id}")).to_have_class(re.compile(r"\bown-partial\b"))
    page.keyboard.press("n")  # the same pair is still the current one
    made.append("n")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓")
    expect(page.locator("#pending")).to_be_hidden()
    stored = [event.new_label for event in _stored(project)]
    assert len(stored) == len(made) and stored == ["aligned", "partial", "not_aligned"]
