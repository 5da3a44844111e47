"""The Import page in Chromium: upload, land on the job page at once, and watch the card turn into the report."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.importing.models import ImportJob
from tests.alignment.conftest import run_worker  # noqa: F401 - the fixture: a real worker in this process
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login


def test_an_upload_is_imported_in_the_background_and_the_job_page_shows_the_report(page: Page, live_server, owner, run_worker):
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    page.get_by_label("Corpus name").fill("Browser upload")
    page.get_by_label("Files").set_input_files([
        {"name": "Tram-adv.txt", "mimeType": "text/plain", "buffer": SAMPLE_ADV.encode()},
        {"name": "Tram-ele.txt", "mimeType": "text/plain", "buffer": SAMPLE_ELE.encode()},
        {"name": "Broken-adv.txt", "mimeType": "text/plain", "buffer": b"\xff\xfe\x00\x00garbage"},
    ])  # fmt: skip
    page.get_by_role("button", name="Import").click()

    job = ImportJob.objects.get()
    expect(page).to_have_url(re.compile(rf"/imports/{job.pk}/$"))
    card = page.locator(f"#import-{job.pk}")
    expect(card).to_contain_text("waiting for a worker")

    run_worker(["imports", "alignment"])

    # The card polls and swaps itself (htmx): the report appears without a reload.
    expect(card).to_contain_text("2 documents created", timeout=15_000)
    expect(card).to_contain_text("1 file not imported")
    expect(card).to_contain_text("Broken-adv.txt")
    expect(card).to_contain_text("Embedding queued")
    expect(card).to_contain_text("Alignment queued for 1 new pair")
    shot(page, "import-job-report.png", full_page=True)
    card.get_by_role("link", name="Browser upload").click()
    expect(page.locator("h1")).to_contain_text("Browser upload")


def test_a_waiting_upload_is_cancelled_from_its_card_without_a_reload(page: Page, live_server, owner, run_worker):
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    page.get_by_label("Corpus name").fill("Wrong files")
    page.get_by_label("Files").set_input_files([{"name": "Tram-adv.txt", "mimeType": "text/plain", "buffer": SAMPLE_ADV.encode()}])
    page.get_by_role("button", name="Import").click()
    job = ImportJob.objects.get()
    card = page.locator(f"#import-{job.pk}")
    expect(card).to_contain_text("waiting for a worker")
    card.get_by_role("button", name="Cancel").click()  # htmx swaps the card
    expect(card).to_contain_text("Cancelled after 0 of 1 file: nothing was imported.")
    expect(card.get_by_role("button", name="Cancel")).to_have_count(0)
    shot(page, "import-job-cancelled.png")
    run_worker(["imports"])  # the task finds the job cancelled
    job.refresh_from_db()
    assert job.status == "cancelled" and job.corpus is None
