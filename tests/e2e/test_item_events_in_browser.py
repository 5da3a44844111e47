"""In Chromium: an annotator flags (f) and comments (c) on a pair, and the manager finds both on the project page;
the inspection view and the run page explain the numbers that puzzled a researcher."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from annotation.models import ItemEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login, _screen_url, annotation_setup  # noqa: F401 - a fixture used as an argument

BRIDGE = (
    "The council opened a new bridge over the river on Monday.\nThe bridge cost twelve million euros to build.\n",
    "The council opened a new bridge and it cost twelve million euros.\nThe bridge cost twelve million euros to build.\n",
)


def test_annotator_flags_and_comments_and_the_manager_sees_both_on_the_project_page(page: Page, live_server, annotation_setup):
    project, pair, _ = annotation_setup
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    page.keyboard.press("f")
    expect(page.locator("#flag-mark")).to_be_visible()
    page.keyboard.press("c")
    expect(page.locator("#comment-text")).to_be_focused()
    page.keyboard.type("The simple text leaves out the queen's eggs.")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#save-status")).to_contain_text("Saved ✓ comment")
    assert list(ItemEvent.objects.filter(project=project).values_list("kind", flat=True)) == ["flag", "comment"]
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    expect(page.locator("#item-events h2")).to_have_text("Your flags and comments")
    expect(page.locator("#item-events tbody tr")).to_have_count(2)

    page.context.clear_cookies()
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    section = page.locator("#item-events")
    expect(section.locator("h2")).to_have_text("Flags and comments")
    expect(section.locator("#item-event-counts")).to_have_text("1 flagged · 0 skipped · 1 comment")
    comment_row = section.locator("tr[data-kind=comment]")
    expect(comment_row).to_contain_text("anna")
    expect(comment_row).to_contain_text("The simple text leaves out the queen's eggs.")
    expect(comment_row).to_contain_text("the whole pair")
    expect(section.locator("tr[data-kind=flag]")).to_contain_text("flagged")
    section.scroll_into_view_if_needed()
    shot(section, "H3-project-flags.png")
    shot(page, "H3-project-page.png", full_page=True)
    comment_row.get_by_role("link").click()
    expect(page).to_have_url(re.compile(rf"/annotate/projects/{project.pk}/pairs/{pair.pk}/review/$"))


def test_inspection_marks_a_zero_marginal_row_via_group_and_the_run_page_explains_its_times(page: Page, live_server, owner, monkeypatch):
    corpus, _ = corpus_get_or_create(name="Bridge", language="en", owner=owner)
    files = [("Bridge-adv.txt", BRIDGE[0].encode()), ("Bridge-ele.txt", BRIDGE[1].encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # the run executes in-process below
    run = aligning.alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"},
        measures=["tfidf_cosine", "jaccard"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    pair = DocumentPair.objects.get(corpus=corpus)
    via_group = CandidateAlignment.objects.get(run=run, simple_sentence__index=1, complex_sentence__index=0)
    _login(page, live_server, "owner", "owner-pass-123")

    page.goto(f"{live_server.url}/pairs/{pair.pk}/inspect/")
    row = page.locator(f"#cand-{via_group.pk}")
    expect(row.locator(".marginal-tag")).to_have_text("via group")
    expect(page.locator("#marginal-legend")).to_be_visible()
    row.locator("td").first.get_by_role("link").click()
    expect(page.locator("#marginal-note")).to_contain_text("simple #2's own CRF choice is complex #2, not complex #1")
    shot(page, "H3-inspect.png", full_page=True)

    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(page.locator("#measure-time")).to_contain_text("ms")
    expect(page.locator("#measure-time")).to_contain_text("encoder 0 s")
    expect(page.locator("#time-help")).to_contain_text("the similarity matrices of the run's 2 measures")
    shot(page, "H3-run.png", full_page=True)
