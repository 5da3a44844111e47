"""The Import page in Chromium: Preview says which level of German A2/C2 files will be complex, one click flips it,
and the import then pairs them the way the preview showed."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.importing.jobs import import_job_execute
from alignment.importing.models import ImportJob
from tests.alignment.test_import_direction import GERMAN_A2, GERMAN_C2, directions
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login


def test_preview_shows_the_complex_side_flips_it_and_the_import_follows(page: Page, live_server, owner):
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    page.get_by_label("Corpus name").fill("Wetter")
    page.get_by_label("Language").fill("de")
    page.get_by_label("Files").set_input_files([
        {"name": "Wetter-A2.txt", "mimeType": "text/plain", "buffer": GERMAN_A2.encode()},
        {"name": "Wetter-C2.txt", "mimeType": "text/plain", "buffer": GERMAN_C2.encode()},
    ])  # fmt: skip

    page.get_by_role("button", name="Preview").click()
    row = page.locator("#direction-articles tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td")).to_have_text(["Wetter", "C2", "A2", "CEFR levels"])
    expect(page.locator("#direction-notes")).to_contain_text("C2 › A2: CEFR levels, a known scheme.")
    expect(page.get_by_label("Level order")).to_have_value("")
    expect(page.get_by_label("Level order")).to_have_attribute("placeholder", "automatic: C2, A2")
    expect(page).to_have_url(re.compile(r"/corpora/import/$"))  # htmx swapped the panel; the form and its files stay
    shot(page, "screenshot-import-direction.png", full_page=True)

    page.get_by_role("button", name="Flip: make A2 the complex side").click()
    expect(row.locator("td")).to_have_text(["Wetter", "A2", "C2", "your order"])
    expect(page.get_by_label("Level order")).to_have_value("A2, C2")
    expect(page.get_by_role("button", name="Flip: make C2 the complex side")).to_be_visible()
    shot(page, "H-import-direction-flipped.png", full_page=True)

    page.get_by_role("button", name="Import", exact=True).click()
    job = ImportJob.objects.get()
    expect(page).to_have_url(re.compile(rf"/imports/{job.pk}/$"))
    assert job.options["level_order"] == ["A2", "C2"]
    import_job_execute(job_id=job.pk)  # what the worker runs; the card polls until it shows the report
    expect(page.locator("#import-direction")).to_contain_text("A2 › C2: your order.", timeout=15_000)
    assert directions() == {("Wetter", "A2", "C2")}
    assert violations == []
