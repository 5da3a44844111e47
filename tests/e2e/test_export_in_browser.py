"""Issue 7 in a real browser with the real worker: a manager adds a webhook, starts an export, the worker writes
it and delivers a signed ``export.ready``, the manager downloads the Wiki-Manual TSV and sees the delivery logged;
the API's interactive docs page renders the schema."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from pathlib import Path

import pytest
from django.test import override_settings
from playwright.sync_api import Page, expect
from procrastinate.contrib.django import app

from alignment.models import DocumentPair
from annotation.models import ExportJob
from tests.annotation.gold_set import build_gold_project
from tests.e2e.test_annotate_in_browser import _login
from tests.webapp.test_webhooks_support import receiver_start
from webapp.webhooks.models import Webhook


@pytest.fixture
def gold(transactional_db, owner, tmp_path):
    # The receiver listens on 127.0.0.1, which webhooks refuse unless allowed (webapp/webhooks/outbound.py).
    with override_settings(EXPORT_DIR=tmp_path / "exports", WEBHOOK_BACKOFF_BASE_SECONDS=0, WEBHOOK_ALLOWED_HOSTS=["127.0.0.1"]):
        project, _annotator = build_gold_project(owner, labelled=4)
        yield project


@pytest.fixture
def receiver():
    receiver, server = receiver_start([200])
    yield receiver
    server.shutdown()
    server.server_close()


def _work() -> None:
    def run() -> None:
        with app.replace_connector(app.connector.get_worker_connector()):
            app.run_worker(queues=["exports", "webhooks"], wait=False, install_signal_handlers=False, listen_notify=False)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=180)
    assert not worker.is_alive(), "the worker did not finish within 180 s"


def test_webhook_export_download_and_signed_delivery(page: Page, live_server, gold, receiver):
    project = gold
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL").fill(receiver.url)
    page.get_by_label("export.ready", exact=False).check()
    page.get_by_role("button", name="Add webhook").click()
    expect(page.locator("section.webhook")).to_contain_text(receiver.url)
    secret = Webhook.objects.get(project=project).secret

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/")
    page.get_by_role("link", name="Exports").click()
    for name in ("CSV", "Parquet", "JSONL with provenance", "simplification training set (complex → simple)"):
        page.get_by_label(name, exact=True).uncheck()
    page.get_by_role("button", name="Export").click()
    expect(page.locator("article.job")).to_contain_text("Queued")
    _work()

    job = ExportJob.objects.get(project=project)
    assert job.status == "succeeded", job.error
    card = page.locator(f"#export-{job.pk}")
    expect(card).to_contain_text("Succeeded", timeout=10_000)  # htmx polling swaps the finished card in
    with page.expect_download() as download:
        card.get_by_role("link", name="train.tsv", exact=False).first.click()
    rows = [line.split("\t") for line in Path(download.value.path()).read_text(encoding="utf-8").splitlines() if line]
    assert rows and {row[0] for row in rows} <= {"aligned", "partialAligned", "notAligned"}
    assert "aligned" in {row[0] for row in rows}
    verified_pairs = DocumentPair.objects.filter(corpus=project.corpus, verifications__verified=True).distinct().count()
    assert verified_pairs == 4

    assert len(receiver.requests) == 1, "export.ready is delivered once"
    request = receiver.requests[0]
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["x-webhook-event"] == "export.ready"
    expected = (
        "sha256=" + hmac.new(secret.encode(), headers["x-webhook-timestamp"].encode() + b"." + request.body, hashlib.sha256).hexdigest()
    )
    assert hmac.compare_digest(expected, headers["x-webhook-signature"])
    assert json.loads(request.body)["project"]["id"] == project.pk

    page.get_by_role("link", name=project.name).first.click()
    page.get_by_role("link", name="Webhooks").click()
    expect(page.locator("section.webhook")).to_contain_text("export.ready")
    expect(page.locator("section.webhook")).to_contain_text("succeeded", ignore_case=True)

    page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui")).to_contain_text("/api/candidates/", timeout=15_000)
