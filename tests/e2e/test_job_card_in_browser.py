"""The job card's buttons in Chromium under the Content-Security-Policy: cancel and resume swap the card
in place (htmx, no inline script), and a finished card stops polling; an embedding run's card on the corpus page too."""

from __future__ import annotations

from django.conf import settings
from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, EmbeddingRun
from alignment.services import corpus_get_or_create, embedding_run_create
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import ADV, ELE
from tests.e2e.test_csp import REPORT_VIOLATIONS, _login


def test_cancel_and_resume_an_alignment_run_from_its_card(page: Page, live_server, transactional_db, owner):
    corpus, _ = corpus_get_or_create(name="Bees", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = aligning.alignment_run_create(
        corpus=corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"]
    )  # no worker: stays queued
    violations: list[str] = []
    page.context.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    _login(page, live_server.url, "owner", "owner-pass-123")

    page.goto(f"{live_server.url}/runs/{run.pk}/")
    card = page.locator(f"#run-{run.pk}")
    expect(card).to_have_attribute("hx-trigger", "every 1s")  # active: the card polls itself
    expect(card.locator(".status")).to_have_text("Queued")
    card.get_by_role("button", name="Cancel").click()

    expect(card.locator(".status")).to_have_text("Cancelled")
    expect(page).to_have_url(f"{live_server.url}/runs/{run.pk}/")  # swapped in place, no navigation
    expect(card).not_to_have_attribute("hx-trigger", "every 1s")
    assert AlignmentRun.objects.get(pk=run.pk).status == AlignmentRun.Status.CANCELLED
    card.get_by_role("button", name="Resume").click()
    expect(card.locator(".status")).to_have_text("Queued")
    expect(card).to_have_attribute("hx-trigger", "every 1s")
    assert AlignmentRun.objects.get(pk=run.pk).status == AlignmentRun.Status.QUEUED
    assert not violations, violations


def test_cancel_and_retry_an_embedding_run_from_the_corpus_page(page: Page, live_server, transactional_db, owner):
    corpus, _ = corpus_get_or_create(name="Bees", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=owner)  # no worker: queued
    _login(page, live_server.url, "owner", "owner-pass-123")

    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")
    card = page.locator(f"#embedding-run-{run.pk}")
    expect(card.locator(".status")).to_have_text("Queued")
    shot(page.locator("#jobs"), "embedding-run-cancel.png")
    card.get_by_role("button", name="Cancel").click()

    expect(card.locator(".status")).to_have_text("Cancelled")
    expect(page).to_have_url(f"{live_server.url}/corpora/{corpus.pk}/")  # the jobs panel swapped in place
    expect(page.locator("#jobs")).not_to_have_attribute("hx-trigger", "every 1s")  # nothing active: polling stops
    expect(page.get_by_role("button", name="Embed missing sentences")).to_be_visible()
    assert EmbeddingRun.objects.get(pk=run.pk).status == EmbeddingRun.Status.CANCELLED
    shot(page.locator("#jobs"), "embedding-run-cancelled.png")
    card.get_by_role("button", name="Retry").click()
    expect(card.locator(".status")).to_have_text("Queued")
    assert EmbeddingRun.objects.get(pk=run.pk).status == EmbeddingRun.Status.QUEUED
