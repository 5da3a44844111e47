"""The Import page's Preview in Chromium: a one-paragraph-per-line file read with blank-line paragraphs gets a hint,
one click switches the mode, and the import then reads each line as a paragraph."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.importing.models import ImportJob
from alignment.models import Document
from tests.alignment.conftest import run_worker  # noqa: F401 - the fixture: a real worker in this process
from tests.alignment.test_import_layout import ONE_PER_LINE
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login

ELEMENTARY = (
    "Elementary\n"
    "The city will build a new tram line. It will go from the harbour to the university.\n"
    "Work starts in spring. It will take three years.\n"
    "Some people think it costs too much.\n"
    "“We will pay for a long time,” one man said.\n"
)


def test_preview_hints_at_the_layout_switches_the_mode_and_the_import_uses_it(page: Page, live_server, owner, run_worker):
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    expect(page.get_by_label("Paragraph mode")).to_have_value("auto")
    page.get_by_label("Corpus name").fill("Previewed trams")
    page.get_by_label("Paragraph mode").select_option("blank")  # the old default, wrong for this file
    page.get_by_label("Drop level header").check()
    page.get_by_label("Files").set_input_files([
        {"name": "Tram-adv.txt", "mimeType": "text/plain", "buffer": ONE_PER_LINE.encode()},
        {"name": "Tram-ele.txt", "mimeType": "text/plain", "buffer": ELEMENTARY.encode()},
    ])  # fmt: skip

    page.get_by_role("button", name="Preview").click()
    hint = page.locator("#layout-hint")
    expect(hint).to_contain_text("This file looks like “each line is a paragraph”, not “a blank line separates paragraphs” as chosen")
    expect(hint).to_contain_text("With your choice it is read as 1 paragraph (below).")
    expect(page.locator("#preview-counts")).to_have_text("1 paragraph, 5 sentences.")
    expect(page).to_have_url(re.compile(r"/corpora/import/$"))  # htmx swapped the panel; the form and its files stay
    shot(page, "screenshot-import-preview.png", full_page=True)
    assert not ImportJob.objects.exists()

    hint.get_by_role("button", name="Use “each line is a paragraph”").click()
    expect(page.locator("#layout-hint")).to_contain_text("This matches your choice.")
    expect(page.get_by_label("Paragraph mode")).to_have_value("line")
    expect(page.locator("#preview-counts")).to_have_text("4 paragraphs, 5 sentences.")
    sentences = page.locator("#preview-result .sentence")
    expect(sentences).to_have_count(5)
    expect(sentences.first).to_have_text("1The city council approved a new tram line on Tuesday.")
    shot(page, "H2-preview-switched.png", full_page=True)

    page.get_by_role("button", name="Import", exact=True).click()
    job = ImportJob.objects.get()
    expect(page).to_have_url(re.compile(rf"/imports/{job.pk}/$"))
    assert job.options["paragraph_mode"] == "line"
    run_worker(["imports", "alignment"])
    card = page.locator(f"#import-{job.pk}")
    expect(card).to_contain_text("2 documents created", timeout=15_000)
    expect(card).to_contain_text("Paragraphs read as: each line is a paragraph (2 files).")
    shot(page, "H2-import-report.png", full_page=True)
    assert sorted(d.paragraphs.count() for d in Document.objects.filter(corpus__name="Previewed trams")) == [4, 4]
    assert violations == []


def test_an_upload_over_the_limit_shows_the_413_message_in_the_preview_panel(page: Page, live_server, owner, settings):
    settings.IMPORT_MAX_FILE_BYTES = 1_000
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    page.get_by_label("Files").set_input_files([{"name": "Big-adv.txt", "mimeType": "text/plain", "buffer": ONE_PER_LINE.encode() * 10}])
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#import-preview")).to_contain_text("Big-adv.txt: the file is over the limit of 1,000 bytes; nothing was imported")
    shot(page, "H2-preview-413.png", full_page=True)
    assert not ImportJob.objects.exists()


def test_an_upload_of_more_files_than_the_limit_shows_the_limit_on_the_import_page(page: Page, live_server, owner, settings):
    settings.IMPORT_MAX_FILES = 2
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    expect(page.get_by_text("at most 2 in one upload")).to_be_visible()  # said before anyone uploads
    page.get_by_label("Corpus name").fill("Too many")
    files = [{"name": f"Tram{k}-adv.txt", "mimeType": "text/plain", "buffer": ONE_PER_LINE.encode()} for k in range(3)]
    page.get_by_label("Files").set_input_files(files)
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("the upload has more than 2 files, the limit for one import; nothing was imported")).to_be_visible()
    shot(page, "H2-import-too-many-files.png", full_page=True)
    assert not ImportJob.objects.exists()
