"""Mining in a real browser, the rough edges: an empty corpus is refused on the form, and pairs mined from the
simple corpus reach the annotator complex side first, with a suggestion for every simple sentence."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from alignment.mining import service as mining
from alignment.mining.models import MiningJob
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import AnnotationProject
from tests.alignment.test_mining import embedded_news_corpora
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login
from tests.e2e.worker import work


def test_mining_into_an_empty_corpus_is_refused_with_the_corpus_named(page: Page, live_server, transactional_db, owner):
    source, _ = embedded_news_corpora(owner, work)
    corpus_get_or_create(name="Nothing yet", language="en", owner=owner)
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/corpora/{source.pk}/mine/")
    lha = page.locator("#lha")
    lha.get_by_label("Target corpus").select_option(label="Nothing yet")
    lha.get_by_role("button", name="Start mining").click()
    expect(lha).to_contain_text("corpus 'Nothing yet' has no documents: import documents into it before mining")
    shot(lha, "H1-empty-corpus-refused.png")
    assert not MiningJob.objects.exists()

    lha.get_by_label("Target corpus").select_option(label="Simple news")  # thresholds nothing reaches: 0 pairs, and why
    lha.get_by_label("θd (document score)").fill("0.99")
    lha.get_by_label("θs (sentence score)").fill("0.99")
    lha.get_by_role("button", name="Start mining").click()
    expect(page).to_have_url(re.compile(r"/mining/\d+/$"))
    work(["mining"])
    expect(page.locator("#progress .status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#no-pairs-reason")).to_contain_text("reached θd 0.99")
    expect(page.locator("#pairs")).to_contain_text("No pairs: the job found none")
    shot(page, "H1-no-pairs-reason.png", full_page=True)


def test_pairs_mined_from_the_simple_corpus_reach_the_annotator_complex_side_first_with_suggestions(
    page: Page, live_server, transactional_db, owner
):
    complex_corpus, simple_corpus = embedded_news_corpora(owner, work)
    job, _ = mining.mining_job_create(
        source_corpus=simple_corpus, target_corpus=complex_corpus, config={"k_documents": 1, "theta_d": 0.3, "theta_s": 0.5}
    )
    work(["mining"])
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/mining/{job.pk}/")
    page.locator("#send").get_by_label("Project name").fill("Mined news")
    page.locator("#send").get_by_role("button", name="Send").click()
    expect(page.locator("h1")).to_contain_text("Mined news")
    expect(page.locator(".messages")).to_contain_text(
        re.compile(r"\d+ mined items? on \d document pairs? of corpus Complex news, complex side first \(corpus 'Complex news' has")
    )
    expect(page.locator(".messages")).not_to_contain_text("(s)")
    expect(page.locator("#overlap-warning")).to_contain_text(re.compile(r"^\d+ pairs? (has|have) no annotator yet"))  # overlap 1
    expect(page.locator("#overlap-warning")).not_to_contain_text("fewer than 1")
    shot(page, "H1-sent-project.png", full_page=True)
    project = AnnotationProject.objects.get(name="Mined news")
    assert project.corpus_id == complex_corpus.pk and not simple_corpus.pairs.exists()

    page.goto(f"{live_server.url}/corpora/{complex_corpus.pk}/")
    expect(page.locator("tr", has_text="mined · simple side in Simple news")).not_to_have_count(0)
    page.locator("tr", has_text="mined · simple side in Simple news").first.scroll_into_view_if_needed()
    shot(page, "H1-corpus-mined-pairs.png")
    page.goto(f"{live_server.url}/corpora/{simple_corpus.pk}/")
    expect(page.get_by_text("No pairs yet")).to_be_visible()

    work(["alignment"])  # the alignment run queued with the project; it becomes the suggestion run
    project.refresh_from_db()
    assert project.suggestion_run_id is not None and project.pending_suggestion_run_id is None
    annotator = get_user_model().objects.create_user("anna", password="anna-pass-123")
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    pair = project.pairs.get(complex_document__external_id="Tram")
    simple = list(pair.simple_document.sentences.order_by("index"))
    page.context.clear_cookies()
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/")
    expect(page.locator("#annotate")).to_contain_text("The city council approved a new tram line on Tuesday.")  # complex side
    for index, sentence in enumerate(simple):
        page.keyboard.press("j")
        expect(page.locator(f"#s-{sentence.pk}")).to_have_class(re.compile(r"\bselected\b"))
        expect(page.locator("#current-pair")).not_to_contain_text("no suggestion")
        expect(page.locator("#current-pair")).to_contain_text(f"Simple #{index + 1} ~ complex #")
        if index == 0:
            shot(page, "H1-annotate-suggestion.png", full_page=True)
