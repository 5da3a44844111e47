"""The alignment run's page in Chromium: its pairs table follows the run without a reload and links to the pairs."""

from __future__ import annotations

import re
import threading

from playwright.sync_api import Page, expect
from procrastinate.contrib.django import app

from alignment.aligning.service import alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun
from alignment.services import corpus_get_or_create
from tests.e2e.shots import shot
from tests.e2e.test_csp import _login
from tests.e2e.test_inspection_in_browser import ADV, ELE

RAIN = (
    "Heavy rain flooded the main road through the village on Monday.\nThe school stayed closed for two days.\n",
    "Rain flooded the main road in the village.\nThe school was closed for two days.\n",
)


def _run_worker_until_idle() -> None:
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=["alignment"], wait=False, install_signal_handlers=False, listen_notify=False)


def test_the_pairs_table_turns_from_pending_to_done_without_a_reload_and_links_to_the_pairs(
    page: Page, live_server, transactional_db, owner
):
    corpus, _ = corpus_get_or_create(name="Bees and rain", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    files += [("Rain-adv.txt", RAIN[0].encode()), ("Rain-ele.txt", RAIN[1].encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = alignment_run_create(corpus=corpus, aligner_config={"measure": "tfidf_cosine", "paragraph_variant": "none"}, measures=["jaccard"])
    pairs = list(run.pairs.order_by("pk"))
    assert len(pairs) == 2

    _login(page, live_server.url, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    rows = page.locator("#run-pairs tbody tr")
    expect(rows).to_have_count(2)
    for pair in pairs:
        expect(page.locator(f"#run-pair-{pair.pk} .status")).to_have_text("pending")
    shot(page, "run-page-pending.png", full_page=True)

    worker = threading.Thread(target=_run_worker_until_idle)  # its own thread: Playwright's event loop runs in this one
    worker.start()
    worker.join(timeout=120)
    assert AlignmentRun.objects.get(pk=run.pk).status == AlignmentRun.Status.SUCCEEDED

    for pair in pairs:
        expect(page.locator(f"#run-pair-{pair.pk} .status")).to_have_text("done", timeout=15_000)
        expect(page.locator(f"#run-pair-{pair.pk}").get_by_role("link", name="Inspect")).to_have_attribute(
            "href", f"/pairs/{pair.pk}/inspect/?run={run.pk}"
        )
    expect(page.locator(f"#run-{run.pk}")).not_to_have_attribute("hx-trigger", "every 1s")  # the card stopped polling
    expect(page.locator("#run-pairs")).to_contain_text("2 of 2 pairs done")
    assert page.evaluate("window.__sameDocument") is True
    shot(page, "screenshot-run.png", full_page=True)

    first = page.locator(f"#run-pair-{pairs[0].pk} td").first.get_by_role("link")
    expect(first).to_have_attribute("href", f"/pairs/{pairs[0].pk}/")
    first.click()
    expect(page).to_have_url(re.compile(rf"/pairs/{pairs[0].pk}/$"))
