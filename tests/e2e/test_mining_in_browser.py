"""Mining in a real browser with the real worker: start LHA from the corpus, follow it live, filter, send to annotation."""

from __future__ import annotations

import re

from django.db import connection
from playwright.sync_api import Page, expect

from alignment.mining.models import MinedPair, MiningJob
from annotation.models import AnnotationProject
from tests.alignment.test_mining import embedded_news_corpora
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login
from tests.e2e.worker import work


def test_start_lha_follow_it_filter_the_pairs_and_send_a_sample_to_annotation(page: Page, live_server, transactional_db, owner):
    corpora = embedded_news_corpora(owner, work)
    source, _target = corpora

    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/corpora/{source.pk}/")
    page.get_by_role("link", name="Mine pairs…").click()
    lha = page.locator("#lha")
    expect(lha.get_by_label("K sentences")).to_have_value("5")  # the defaults, and no errors before a submit
    expect(page.locator(".error")).to_have_count(0)
    shot(page, "mining_start.png", full_page=True)
    lha.get_by_label("Target corpus").select_option(label="Simple news")
    lha.get_by_label("K documents").fill("1")
    lha.get_by_label("θd (document score)").fill("0.3")
    lha.get_by_label("θs (sentence score)").fill("0.5")
    lha.get_by_role("button", name="Start mining").click()
    expect(page).to_have_url(re.compile(r"/mining/\d+/$"))
    expect(page.locator("#progress .status")).to_have_text("Queued")
    work(["mining"])
    expect(page.locator("#progress .status")).to_have_text("Succeeded", timeout=30_000)  # htmx polled the card
    job = MiningJob.objects.get()
    expect(page.locator("#job-stats")).to_contain_text(str(job.pairs_found))
    # no reload: the card's last poll swapped the pairs table in too
    expect(page.locator("#pairs-count")).to_have_text(re.compile(rf"^{job.pairs_found} pairs? match(es)?\."))
    expect(page.locator("#pairs tbody tr")).to_have_count(min(job.pairs_found, 50))
    expect(page.locator("#pairs")).not_to_contain_text("No pairs")
    shot(page, "H1-mining-finished.png", full_page=True)

    page.get_by_label("Search").fill("honey")
    page.get_by_role("button", name="Apply").click()
    expected = (
        MinedPair.objects.filter(job=job, source_text__icontains="honey").count()
        or MinedPair.objects.filter(job=job, target_text__icontains="honey").count()
    )
    expect(page.locator("#pairs-count")).to_contain_text(re.compile(r"^\d+ pairs? match(es)?\."))
    expect(page.locator("#pairs tbody tr")).not_to_have_count(0)
    assert expected > 0
    expect(page).to_have_url(re.compile(r"q=honey"))  # hx-push-url keeps the filter in the address
    shot(page, "screenshot-mining.png", full_page=True)

    page.locator("#pairs tbody input[type=checkbox]").first.check()
    page.locator("#send").get_by_label("Project name").fill("Honey pairs")
    page.locator("#send").get_by_role("button", name="Send").click()
    expect(page.locator("h1")).to_contain_text("Honey pairs")
    project = AnnotationProject.objects.get(name="Honey pairs")
    assert project.suggestion_run.candidates.count() >= 1


def test_a_muss_job_encoded_in_shards_shows_the_sequences_encoded_then_its_search(
    page: Page, live_server, transactional_db, owner, settings
):
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.mining import service as mining
    from alignment.mining.models import MiningShard
    from alignment.services import corpus_get_or_create
    from tests.alignment.test_muss_rows import TEXTS, encode

    settings.MINING_ENCODE_SHARD_SEQUENCES = 3  # the three documents: an encode shard each
    corpus, _ = corpus_get_or_create(name="Paraphrases", language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in TEXTS.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 3, "encode_batch": 2}, created_by=owner)
    mining.mining_job_prepare(job_id=job.pk, encode=encode)  # counts and cuts the shards (run here, with a stand-in encoder)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")  # so the worker below runs only what follows the encoding
    first, *others = MiningShard.objects.filter(job=job, phase="encode").order_by("index")
    mining.mining_shard_execute(shard_id=first.pk, encode=encode)
    job.refresh_from_db()
    shards = MiningShard.objects.filter(job=job, phase="encode").count()

    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/mining/{job.pk}/")
    expect(page.locator("#progress-text")).to_have_text(
        f"{first.end} of {job.documents_total} sequences encoded (in shards) · 1 of {shards} shards done"
    )
    shot(page, "mining_encode_shards.png", full_page=True)
    for shard in others:
        mining.mining_shard_execute(shard_id=shard.pk, encode=encode)
    work(["mining"])  # what the last encode shard queued: the prepare again (the index), then the neighbours and pairs shards
    expect(page.locator("#progress .status")).to_have_text("Succeeded", timeout=30_000)
    job.refresh_from_db()
    expect(page.locator("#progress-text")).to_contain_text(
        f"{job.documents_total} of {job.documents_total} sequence steps (neighbours, then pairs) · {job.shards_total} of {job.shards_total} shards done"
    )
