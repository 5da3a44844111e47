"""The project's guidelines where the work happens, in Chromium: on the annotation screen and in the queue, shown or
hidden with i (remembered per project); the queue answers by htmx, without reloading the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from annotation.models import LabelEvent
from tests.e2e.ready import QUEUE, settled
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url
from tests.e2e.test_keyboard_flow_in_browser import twenty_sentence_pair  # noqa: F401 - a fixture

GUIDELINES = (
    "Aligned: the simple sentence says what the complex one says (it may be shorter or simpler).\n"
    "Partial: it keeps part of the complex sentence and drops or adds a fact.\n"
    "Not aligned: they share no content."
)


@pytest.fixture
def guided_project(twenty_sentence_pair):
    project, pair, run = twenty_sentence_pair
    project.guidelines = GUIDELINES
    project.test_item_rate = 0.0
    project.save()
    return project, pair, run


def test_guidelines_are_on_the_screen_and_in_the_queue_and_i_hides_and_shows_them(page: Page, live_server, guided_project):
    project, pair, _run = guided_project
    page.set_viewport_size({"width": 1280, "height": 720})
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    body = page.locator("#guidelines-body")
    expect(body).to_be_visible()
    expect(body).to_contain_text("Partial: it keeps part of the complex sentence")
    page.keyboard.press("i")
    expect(body).to_be_hidden()
    expect(page.locator("#guidelines")).to_contain_text("Guidelines")  # the heading stays, with its key
    page.reload()
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    expect(body).to_be_hidden()  # remembered for this project
    page.keyboard.press("i")
    expect(body).to_be_visible()

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/queue/")
    expect(page.locator("#guidelines-body")).to_be_visible()
    expect(page.locator("#guidelines-body")).to_contain_text("Not aligned: they share no content.")
    shot(page, "screenshot-queue-guidelines.png")
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    left = int(page.locator("#queue-left strong").text_content())
    first = page.locator('#queue-form input[name="item_id"]').get_attribute("value")
    settled(page, QUEUE)
    page.keyboard.press("n")
    expect(page.locator("#queue-left strong")).to_have_text(str(left - 1))
    expect(page.locator('#queue-form input[name="item_id"]')).not_to_have_attribute("value", first)
    assert page.evaluate("window.__sameDocument") is True, "the queue answered without reloading the page"
    event = LabelEvent.objects.get(project=project)
    assert event.new_label == "not_aligned" and event.seconds_spent is not None and event.seconds_spent >= 0
    settled(page, QUEUE)
    page.keyboard.press("u")  # the undo comes back by htmx too, with its note
    expect(page.locator("#queue-main .messages")).to_contain_text("The last label was undone.")
    expect(page.locator('#queue-form input[name="item_id"]')).to_have_attribute("value", first)
    assert page.evaluate("window.__sameDocument") is True
    settled(page, QUEUE)
    page.keyboard.press("i")
    expect(page.locator("#guidelines-body")).to_be_hidden()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_contain_text("show / hide the project's guidelines")
