"""A page left open while another user signs in (in another tab of the same browser) says so, in Chromium.

Its top bar went on naming the old user while what it sent went out as the new one. Now, when the tab comes back
into view, it asks the session probe and says who is signed in now, with a reload link (static/js/app.js).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login


def test_a_tab_opened_as_anna_says_so_once_ben_signs_in_elsewhere(page: Page, live_server, transactional_db) -> None:
    users = get_user_model().objects
    users.create_user("anna", password="anna-pass-123")
    users.create_user("ben", password="ben-pass-123")
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(f"{live_server.url}/")
    expect(page.locator(".userbox span")).to_have_text("anna")
    banner = page.locator("#session-changed")
    expect(banner).to_be_hidden()

    other = page.context.new_page()  # another tab of the same browser: the same session cookie
    other.goto(f"{live_server.url}/")
    other.get_by_role("button", name="Log out").click()
    _login(other, live_server, "ben", "ben-pass-123")
    page.bring_to_front()
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # what the browser fires when the tab is used again
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("This page was opened as anna; this browser is now signed in as ben")
    shot(page, "session-changed.png")
    banner.get_by_role("link", name="Reload").click()
    expect(page.locator(".userbox span")).to_have_text("ben")
    expect(page.locator("#session-changed")).to_be_hidden()

    other.get_by_role("button", name="Log out").click()  # signed out altogether
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(page.locator("#session-changed")).to_contain_text("who has signed out since")
    other.close()
