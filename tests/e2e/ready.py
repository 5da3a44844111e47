"""The pages' own "ready" signals, for browser tests that press a key after an htmx answer.

A key pressed while the page is still taking in an answer could be dropped (the queue keeps one answer per card)
or refused ("still saving"); a fixed pause would only make that rarer. Each page says when it is ready:
``aria-busy="false"`` on the region its answers replace, set once its keys are bound and again after htmx's
``afterRequest`` for the last answer (htmx fires it after swapping the answer in), and ``data-ready`` on the
annotation screen (static/js/annotate.js).
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

QUEUE = ".queue-layout"  # static/js/queue.js
REVIEW = "#review"  # static/js/curation.js


def settled(page: Page, region: str) -> None:
    """Wait until ``region`` says nothing is on its way (and its keys are bound)."""
    expect(page.locator(region)).to_have_attribute("aria-busy", "false")
