"""The whole loop in a real browser with the real worker: label → verify → train → compare → promote → re-align →
the new suggestions appear on the annotation screen."""

from __future__ import annotations

import re
import threading

import pytest
from django.test import override_settings
from playwright.sync_api import Page, expect
from procrastinate.contrib.django import app

from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair
from annotation.models import AnnotationProject, LabelEvent, ModelVersion, TrainingJob
from tests.annotation.gold_set import build_gold_project
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _login

LINKED = re.compile(r"\bpred-(aligned|partial)\b")


@pytest.fixture
def gold(transactional_db, owner, tmp_path):
    """Five of the six articles labelled and verified already; the sixth is labelled in the browser."""
    with override_settings(MODEL_DIR=tmp_path / "models"):
        project, _annotator = build_gold_project(owner, labelled=5)
        last = DocumentPair.objects.filter(corpus=project.corpus).order_by("pk").last()
        yield project, last


def _run_worker_until_idle() -> None:
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(queues=["training", "alignment"], wait=False, install_signal_handlers=False, listen_notify=False)


def _work() -> None:
    worker = threading.Thread(target=_run_worker_until_idle)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive(), "the worker did not finish within 300 s"


def _unlinked_gold_pair(project: AnnotationProject) -> tuple[DocumentPair, int, int]:
    """A gold link (simple k ~ complex k) the current suggestions do not propose."""
    for pair in DocumentPair.objects.filter(corpus=project.corpus).order_by("pk"):
        simple = list(pair.simple_document.sentences.order_by("index"))
        complex_ = list(pair.complex_document.sentences.order_by("index"))
        for s, c in zip(simple, complex_):
            linked = CandidateAlignment.objects.filter(run=project.suggestion_run, simple_sentence=s, complex_sentence=c).exclude(
                label="not_aligned"
            )
            if not linked.exists():
                return pair, s.pk, c.pk
    raise AssertionError("the untrained aligner already proposes every gold link")


def test_label_verify_train_compare_promote_realign_and_see_the_new_suggestions(page: Page, live_server, gold):
    """Long because it is one user story end to end; split into steps, each would only hand the same state on."""
    project, pair = gold
    base = f"{live_server.url}/annotate/projects/{project.pk}"
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))

    # 1. label in the browser: the annotator links simple k with complex k and marks the pair done.
    _login(page, live_server, "gina", "gina-pass-123")
    page.goto(f"{base}/pairs/{pair.pk}/")
    for s, c in zip(simple, complex_):
        page.locator(f"#s-{s.pk} .sent-text").click()
        page.locator(f"#c-{c.pk} .sent-text").click()
        page.keyboard.press("a")
        expect(page.locator(f"#c-{c.pk}")).to_have_class(re.compile(r"\bown-aligned\b"))
    page.keyboard.press("d")  # done, and on to gina's next open pair (or My tasks)
    if page.locator("#finish-box").is_visible():  # simple sentences beyond the complex ones stay unlabelled: confirmed
        page.keyboard.press("Enter")
    expect(page).not_to_have_url(re.compile(rf"/pairs/{pair.pk}/$"))
    assert project.assignments.get(pair=pair, annotator__username="gina").completed_at is not None
    assert LabelEvent.objects.filter(pair=pair, new_label="aligned").count() == len(simple)
    target_pair, target_simple, target_complex = _unlinked_gold_pair(project)
    page.goto(f"{base}/pairs/{target_pair.pk}/")
    page.locator(f"#s-{target_simple} .sent-text").click()
    expect(page.locator(f"#c-{target_complex}")).not_to_have_class(LINKED)  # the untrained aligner misses it

    # 2. verify: the manager reviews the pair and marks it verified.
    page.context.clear_cookies()
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{base}/pairs/{pair.pk}/review/")
    page.get_by_role("button", name="Mark verified").click()
    expect(page.get_by_role("button", name="Withdraw verification")).to_be_visible()

    # 3. train from the Models page; the worker runs the job and the page follows its progress.
    page.goto(f"{base}/models/")
    expect(page.locator("#training-data")).to_contain_text("train")
    page.get_by_label("Epochs", exact=True).fill("15")
    page.get_by_label("Learning rate").fill("0.1")
    page.get_by_role("button", name="Train").click()
    expect(page.locator("#jobs .status").first).to_have_text("Queued")
    _work()
    expect(page.locator("#jobs .status").first).to_have_text("Succeeded", timeout=30_000)  # htmx swapped the card
    expect(page.locator("#jobs table.epochs tbody tr").first).to_contain_text("0 (start)")  # the weights it started from
    expect(page.locator("#jobs table.epochs tbody tr").nth(1)).to_contain_text("1 /")
    job = TrainingJob.objects.get()
    assert str(pair.pk) in job.snapshot.splits  # the pair labelled in the browser is in the training snapshot

    # 4. compare: the new version next to the base aligner on the same test documents. No reload: the
    # Versions table refreshes itself once the job's card has seen the new version (HX-Trigger).
    row = page.locator("#version-1")
    expect(row).to_contain_text("the hand-calibrated aligner on jaccard:")  # the gold project's suggestion run
    expect(row).to_contain_text("better")
    shot(page, "screenshot-models.png", full_page=True)

    # 5. promote, 6. re-align in the background.
    row.get_by_role("button", name="Promote").click()
    expect(page.locator("#active-model")).to_have_text("v1")
    expect(page.locator("#pending-run")).to_be_visible()
    labels_before = list(LabelEvent.objects.order_by("pk").values_list("pk", "new_label"))
    _work()
    project.refresh_from_db()
    version = ModelVersion.objects.get()
    assert project.active_model == version and project.pending_suggestion_run is None
    assert project.suggestion_run.status == AlignmentRun.Status.SUCCEEDED and version.path in project.suggestion_run.config["model_dir"]
    assert list(LabelEvent.objects.order_by("pk").values_list("pk", "new_label")) == labels_before

    # 7. the annotator sees the new model's suggestions.
    page.context.clear_cookies()
    _login(page, live_server, "gina", "gina-pass-123")
    page.goto(f"{base}/pairs/{target_pair.pk}/")
    page.locator(f"#s-{target_simple} .sent-text").click()
    expect(page.locator(f"#c-{target_complex}")).to_have_class(LINKED)
