"""The annotation screen comes back to the sentence selected before Back or a reload, in Chromium.

The page is never cached (no-store), so Back loads it again; the selection was lost and the annotator hunted for their
place. It is now kept in the page's history entry (annotate_focus.js, remember / restore).
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.test_annotate_in_browser import _login, _screen_url, annotation_setup  # noqa: F401 - a fixture


def test_back_and_reload_return_to_the_selected_sentence(page: Page, live_server, annotation_setup) -> None:
    project, pair, _run = annotation_setup
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate[data-ready='true']")).to_be_attached()
    for _ in range(3):
        page.keyboard.press("j")  # simple #3
    page.locator(f"#c-{complex_[-1].pk} .sent-text").click()  # and the last complex sentence as its partner
    selected = re.compile(r"\bselected\b")
    expect(page.locator(f"#s-{simple[2].pk}")).to_have_class(selected)

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    page.go_back()
    expect(page.locator("#annotate[data-ready='true']")).to_be_attached()
    expect(page.locator(f"#s-{simple[2].pk}")).to_have_class(selected)
    expect(page.locator(f"#c-{complex_[-1].pk}")).to_have_class(re.compile(r"\bcurrent\b"))

    page.reload()
    expect(page.locator("#annotate[data-ready='true']")).to_be_attached()
    expect(page.locator(f"#s-{simple[2].pk}")).to_have_class(selected)
    page.keyboard.press("j")  # and the keys go on from there
    expect(page.locator(f"#s-{simple[3].pk}")).to_have_class(selected)
