"""The Import page in Chromium: a corpus the user may not add to is shown on the Corpus name field, and nothing is staged."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from alignment import services
from alignment.importing.models import ImportJob
from tests.conftest import SAMPLE_ADV
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login


def test_someone_elses_corpus_is_shown_on_the_corpus_name_field(page: Page, live_server, owner, outsider):
    services.corpus_get_or_create(name="Theirs", language="en", owner=outsider)
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(live_server.url + "/corpora/import/")
    page.get_by_label("Corpus name").fill("Theirs")
    page.get_by_label("Files").set_input_files([{"name": "Tram-adv.txt", "mimeType": "text/plain", "buffer": SAMPLE_ADV.encode()}])
    page.get_by_role("button", name="Import", exact=True).click()

    field = page.locator("#field-corpus_name")
    expect(field).to_have_class("field has-error")
    expect(field).to_contain_text("the name 'Theirs' is not available; choose another name")
    expect(page.get_by_label("Corpus name")).to_have_value("Theirs")  # what was typed stays, to be changed
    shot(page, "H1-import-corpus-refused.png", full_page=True)
    assert not ImportJob.objects.exists()
