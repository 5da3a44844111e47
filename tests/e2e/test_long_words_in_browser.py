"""A 96-character German compound at 1024×768: it wraps in the annotation screen (sentence, diff panel, alignment
view), the queue card and the pair page, instead of being clipped or stretching the page sideways."""

from __future__ import annotations

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
from tests.e2e.test_annotate_in_browser import _login, _screen_url

COMPOUND = "Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichenherstellungsbetriebsratsmitgliederwahl"
COMPLEX = (
    f"Die {COMPOUND} fand gestern in Wien statt und dauerte bis spät in die Nacht.\nDie Mitglieder stimmten über den neuen Vorstand ab.\n"
)
SIMPLE = f"Die {COMPOUND} war gestern in Wien.\nDie Mitglieder wählten einen neuen Vorstand.\n"


@pytest.fixture
def compound_pair(transactional_db, owner, monkeypatch):
    assert len(COMPOUND) == 96
    corpus, _ = corpus_get_or_create(name="Wahl", language="de", owner=owner)
    files = [("Wahl-adv.txt", COMPLEX.encode()), ("Wahl-ele.txt", SIMPLE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    run = aligning.alignment_run_create(
        corpus=corpus, aligner_config={"measure": "jaccard", "null_score": 0.05, "paragraph_variant": "none"}, measures=["jaccard"]
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    project = services.project_create(name="Wahl gold", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return project, DocumentPair.objects.get(corpus=corpus)


def _overflowing(page: Page, selector: str) -> list[str]:
    """The elements matching ``selector`` whose content is wider than their box (clipped or spilling out)."""
    return page.eval_on_selector_all(
        selector, "els => els.filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.textContent.slice(0, 60))"
    )


def _page_fits(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_96_character_compound_wraps_on_every_annotator_screen_and_the_pair_page_at_1024x768(page: Page, live_server, compound_pair):
    project, pair = compound_pair
    page.set_viewport_size({"width": 1024, "height": 768})
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    page.keyboard.press("j")  # simple #1 and its suggestion, complex #1: both hold the compound, and so does the diff
    expect(page.locator("#diff h2")).to_contain_text("Simple #1 ~ complex #1")
    expect(page.locator("#diff-complex")).to_contain_text(COMPOUND)
    assert _overflowing(page, "#annotate .sent-text, #annotate .sentence, #diff .diff-text, #diff, .annotate-panel") == []
    assert _page_fits(page)
    page.keyboard.press("v")
    expect(page.locator("#alignment-view .align-row").first).to_contain_text(COMPOUND)
    assert _overflowing(page, "#alignment-view .align-sentence, #alignment-view .align-row") == []
    assert _page_fits(page)

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/queue/?order=disagreement")
    expect(page.locator("#queue-item")).to_be_visible()
    assert _overflowing(page, ".queue-sides .diff-text, .queue-sides .context, #queue-item") == []
    assert _page_fits(page)

    page.context.clear_cookies()
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/pairs/{pair.pk}/")
    expect(page.locator("#complex-document")).to_contain_text(COMPOUND)
    assert _overflowing(page, ".doc .sentence, .doc .sent-text, .doc") == []
    assert _page_fits(page), "the pair page is no wider than the window"
