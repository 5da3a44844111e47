"""A researcher opens the inspection view of an aligned pair in a real browser: heatmap, diff, sorting."""

from __future__ import annotations

import re
import threading

import pytest
from playwright.sync_api import Page, expect
from procrastinate.contrib.django import app

from alignment.aligning.service import alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from alignment.services import corpus_get_or_create
from tests.e2e.shots import shot

ADV = (
    "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n\n"
    "A hive can hold fifty thousand bees in summer.\nThe queen lays up to two thousand eggs a day.\n"
)
ELE = (
    "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n\n"
    "Many bees live in one hive.\nThe queen lays many eggs.\n"
)


@pytest.fixture
def aligned_pair(transactional_db, owner):
    corpus, _ = corpus_get_or_create(name="Bees", language="en", owner=owner)
    files = [("Bees-adv.txt", ADV.encode()), ("Bees-ele.txt", ELE.encode())]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = alignment_run_create(
        corpus=corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"},
        measures=["tfidf_cosine", "char3_tfidf_cosine", "jaccard"],
    )
    worker = threading.Thread(target=_run_worker_until_idle)  # its own thread: Playwright's event loop runs in this one
    worker.start()
    worker.join(timeout=120)
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    return DocumentPair.objects.get(corpus=corpus), run


def test_researcher_sees_heatmap_opens_a_diff_and_sorts_without_reload(page: Page, live_server, aligned_pair):
    pair, run = aligned_pair
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill("owner")
    page.get_by_label("Password").fill("owner-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/pairs/{pair.pk}/inspect/")

    canvas = page.locator("#heatmap")
    expect(canvas).to_be_visible()
    dark_pixels = page.evaluate(
        """() => {
          const c = document.getElementById('heatmap');
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let dark = 0;
          for (let k = 0; k < d.length; k += 4) if (d[k] < 120 && d[k + 2] > 80) dark++;  // dark blue cells
          return dark;
        }"""
    )
    assert dark_pixels > 100

    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    first = CandidateAlignment.objects.get(run=run, simple_sentence__index=0, complex_sentence__index=0)
    page.locator(f"#cand-{first.pk} td.text").first.click()
    expect(page.locator("#diff del").first).to_be_visible()
    expect(page.locator("#diff")).to_contain_text("Honeybees visit thousands of flowers")
    expect(page.locator("#diff ins").first).to_be_visible()
    expect(page.locator(f"#cand-{first.pk}")).to_have_class(re.compile(r"\bselected\b"))

    # A heatmap cell with a candidate: "They collect nectar." (simple #2) x complex #1.
    second = CandidateAlignment.objects.get(run=run, simple_sentence__index=1, complex_sentence__index=0)
    geometry = page.evaluate(
        """() => { const d = JSON.parse(document.getElementById('heatmap-data').textContent);
                   return {rows: d.rows, cols: d.cols}; }"""
    )
    cell = max(2, min(44, 600 // max(geometry["rows"], geometry["cols"])))
    canvas.click(position={"x": 34 + 0.5 * cell, "y": 20 + 1.5 * cell})
    expect(page.locator("#diff h2")).to_contain_text("simple #2 ~ complex #1")
    expect(page.locator(f"#cand-{second.pk}")).to_have_class(re.compile(r"\bselected\b"))
    expect(page).to_have_url(re.compile(rf"candidate={second.pk}"))

    page.get_by_role("link", name=re.compile(r"^Disagreement")).click()
    expect(page).to_have_url(re.compile(r"sort=-disagreement"))
    expect(page.locator("th a", has_text="Disagreement")).to_contain_text("↓")
    spreads = [float(text) for text in page.locator("tr.candidate-row td:last-child").all_inner_texts()]
    assert spreads == sorted(spreads, reverse=True) and len(spreads) > 3
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator(f"#cand-{second.pk}")).to_have_class(re.compile(r"\bselected\b"))  # kept across the swap
    expect(page.locator("#diff h2")).to_contain_text("simple #2 ~ complex #1")
    shot(page, "inspect-sorted.png", full_page=True)  # the README's picture comes from test_inspection_overlay_in_browser.py


def _run_worker_until_idle() -> None:
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=["alignment"], wait=False, install_signal_handlers=False, listen_notify=False)
