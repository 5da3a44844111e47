"""A user logs in, opens a demo pair and sees both documents, in a real browser."""

from __future__ import annotations

import re
import threading

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect
from procrastinate.contrib.django import app

from alignment.models import DocumentPair
from alignment.selectors import corpus_counts
from tests.e2e.shots import shot
from webapp.demo import DEMO_CORPUS_NAME, demo_accounts_ensure, demo_corpus_import


@pytest.fixture
def demo(transactional_db, tmp_path):
    credentials = {c.username: c.password for c in demo_accounts_ensure(tmp_path)}
    corpus, _ = demo_corpus_import(owner=get_user_model().objects.get(username="manager"))
    return corpus, credentials


def test_annotator_logs_in_and_sees_both_documents_of_a_demo_pair(page: Page, live_server, demo, tmp_path):
    corpus, credentials = demo
    page.goto(live_server.url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))

    page.get_by_label("Username").fill("annotator")
    page.get_by_label("Password").fill(credentials["annotator"])
    page.get_by_role("button", name="Log in").click()

    page.get_by_role("link", name=DEMO_CORPUS_NAME).click()
    expect(page.get_by_role("heading", name=DEMO_CORPUS_NAME)).to_be_visible()
    pair = DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document").first()
    page.get_by_role("link", name=pair.complex_document.title).first.click()

    complex_side = page.locator("#complex-document")
    simple_side = page.locator("#simple-document")
    expect(complex_side).to_be_visible()
    expect(simple_side).to_be_visible()
    first_complex = pair.complex_document.sentences.order_by("index").first().text
    first_simple = pair.simple_document.sentences.order_by("index").first().text
    expect(complex_side.locator(".sentence").first).to_contain_text(first_complex)
    expect(simple_side.locator(".sentence").first).to_contain_text(first_simple)
    expect(complex_side.locator(".paragraph")).to_have_count(pair.complex_document.paragraphs.count())
    expect(simple_side.locator(".sentence")).to_have_count(pair.simple_document.sentences.count())
    shot(page, "screenshot-pair.png", full_page=True)


def test_wrong_password_is_refused(page: Page, live_server, demo):
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill("annotator")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("didn't match")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))


def test_corpus_page_shows_embedding_progress_live_until_the_job_ends(page: Page, live_server, demo):
    """The job fragment polls while the run is queued or running and stops once it has finished."""
    corpus, credentials = demo
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill("manager")
    page.get_by_label("Password").fill(credentials["manager"])
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/corpora/{corpus.pk}/")
    status = page.locator("#jobs .status").first
    expect(status).to_have_text("Queued")
    expect(page.locator("#jobs")).to_have_attribute("hx-trigger", "every 1s")

    worker = threading.Thread(target=_run_worker_until_idle)
    worker.start()
    try:
        expect(status).to_have_text("Succeeded", timeout=90_000)  # no reload: htmx swapped the fragment
    finally:
        worker.join(timeout=120)
    expect(page.locator("#jobs")).not_to_have_attribute("hx-trigger", "every 1s", timeout=60_000)
    sentences = corpus_counts(corpus)[0]
    expect(page.locator("#jobs")).to_contain_text(f"{sentences} of {sentences} sentences embedded")
    expect(page.locator("#jobs")).to_contain_text("6 / 6 pairs")  # the demo's alignment run, queued after embedding


def _run_worker_until_idle() -> None:
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=["embedding", "alignment"], wait=False, install_signal_handlers=False, listen_notify=False)
