"""The main screens under the Content-Security-Policy in Chromium: no violation, and htmx still works."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import LabelEvent
from tests.e2e.test_annotate_in_browser import ADV, ELE

# Chromium reports a violation on the console ("Refused to ... because it violates the following
# Content Security Policy directive"); the event listener also catches ones it would only count.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`Content Security Policy violation: ${event.violatedDirective} blocked ${event.blockedURI} at ${event.sourceFile}:${event.lineNumber}`);
});
"""


@pytest.fixture
def project_setup(transactional_db, owner):
    """An aligned pair in a project managed by "owner", assigned to the annotator "anna"."""
    corpus, _ = corpus_get_or_create(name="Bees", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)  # in-process: no worker here
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="Bees gold", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return corpus, project, DocumentPair.objects.get(corpus=corpus), run


def _login(page: Page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/accounts/login/"))


def test_main_screens_raise_no_csp_violation_and_htmx_still_works(page: Page, live_server, project_setup):
    corpus, project, pair, run = project_setup
    base = live_server.url
    violations: list[str] = []
    page.context.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(f"{page.url}: {message.text}"))

    def visit(path: str, shows: str) -> None:
        response = page.goto(f"{base}{path}")
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        expect(page.locator("body")).to_contain_text(shows)
        page.wait_for_load_state("networkidle")

    visit("/accounts/login/", "Log in")
    _login(page, base, "owner", "owner-pass-123")
    visit("/", "Bees")
    visit(f"/corpora/{corpus.pk}/", "Bees")
    visit(f"/pairs/{pair.pk}/", "Bees")
    visit(f"/pairs/{pair.pk}/inspect/", "Disagreement")
    expect(page.locator("#heatmap")).to_be_visible()
    visit(f"/runs/{run.pk}/", "Succeeded")
    visit(f"/corpora/{corpus.pk}/mine/", "Bees")
    visit(f"/annotate/projects/{project.pk}/", "Bees gold")
    visit(f"/annotate/projects/{project.pk}/pairs/{pair.pk}/review/", "Bees gold")
    visit(f"/annotate/projects/{project.pk}/models/", "Bees gold")
    visit(f"/annotate/projects/{project.pk}/exports/", "Bees gold")
    visit("/api/docs/", "")
    expect(page.locator("#swagger-ui .info")).to_contain_text("Sentence-alignment workbench API")
    visit("/no/such/page/", "Page not found")

    page.get_by_role("button", name="Log out").click()
    _login(page, base, "anna", "anna-pass-123")
    visit(f"/annotate/projects/{project.pk}/queue/", "Bees")
    other_order = page.locator("#order option:not([selected])").first.get_attribute("value")
    page.select_option("#order", other_order)  # submits through static/js/app.js, not an inline handler
    expect(page).to_have_url(re.compile(rf"order={other_order}"))
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    left = page.locator("#queue-left strong").text_content()
    page.keyboard.press("a")  # an hx-post swapping the card
    expect(page.locator("#queue-left strong")).to_have_text(str(int(left) - 1))
    assert page.evaluate("window.__sameDocument") is True, "htmx swapped the card; no full reload"
    visit(f"/annotate/projects/{project.pk}/pairs/{pair.pk}/", "simple sentences labelled")
    page.keyboard.press("j")
    page.keyboard.press("l")
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert LabelEvent.objects.filter(project=project, annotator__username="anna", new_label="aligned").exists()
    page.keyboard.press("v")  # the alignment view, drawn by script
    expect(page.locator("#alignment-view .align-row").first).to_be_visible()

    assert violations == []
