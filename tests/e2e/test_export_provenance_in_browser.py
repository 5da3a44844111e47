"""Export provenance per label in Chromium: an annotator labels on the screen under one suggestion run, a re-alignment
replaces the suggestions, she labels again; the manager verifies and exports, and the downloaded JSONL cites, per label,
the run and model that were suggesting when it was made, and takes each item's aligner block from that run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import override_settings
from playwright.sync_api import Page, expect

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, CandidateAlignment
from annotation.export import service as export
from annotation.models import AnnotationProject, ExportJob, LabelEvent
from tests.e2e.shots import shot
from tests.e2e.test_annotate_in_browser import _best_suggestion, _login, annotation_setup  # noqa: F401 - a fixture


@pytest.fixture
def exports_here(tmp_path):
    with override_settings(EXPORT_DIR=tmp_path / "exports"):
        yield


def _realign(project: AnnotationProject) -> AlignmentRun:
    """A re-alignment with another model that becomes the suggestion run, as a promotion's does when it succeeds."""
    run = aligning.alignment_run_create(corpus=project.corpus, aligner_config={"measure": "jaccard"}, measures=["jaccard"])
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=run)
    return run


def _downloaded_jsonl(page: Page, card) -> list[dict]:
    rows = []
    for link in card.locator("a", has_text=re.compile(r"jsonl\S*\.jsonl$")).all():
        with page.expect_download() as download:
            link.click()
        rows += [json.loads(line) for line in Path(download.value.path()).read_text(encoding="utf-8").splitlines() if line]
    return rows


def test_the_jsonl_cites_the_suggestions_each_label_was_made_with(page: Page, live_server, annotation_setup, exports_here) -> None:
    project, pair, first = annotation_setup
    simple = list(pair.simple_document.sentences.order_by("index"))
    suggested = _best_suggestion(first, simple[0].pk)
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/")
    page.keyboard.press("j")  # simple #1 and its best suggestion under the first run
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")

    second = _realign(project)
    page.reload()  # back on simple #1, selected before the reload (kept in the history entry)
    expect(page.locator(f"#s-{simple[0].pk}")).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("j")  # simple #2
    expect(page.locator(f"#s-{simple[1].pk}")).to_have_class(re.compile(r"\bselected\b"))
    linked = pair.complex_document.sentences.order_by("index")[1]
    page.locator(f"#c-{linked.pk} .sent-text").click()
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert LabelEvent.objects.filter(project=project, new_label="aligned").count() == 2

    page.context.clear_cookies()
    _login(page, live_server, "owner", "owner-pass-123")
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/pairs/{pair.pk}/review/")
    page.get_by_role("button", name="Mark verified").click()
    expect(page.locator("#verified-badge")).to_be_visible()
    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/exports/")
    for name in ("CSV", "Parquet", "Wiki-Manual TSV", "simplification training set (complex → simple)"):
        page.get_by_label(name, exact=False).uncheck()
    page.get_by_role("button", name="Export").click()
    job = ExportJob.objects.get(project=project)
    assert export.export_job_execute(job_id=job.pk).status == "succeeded"
    card = page.locator(f"#export-{job.pk}")
    expect(card).to_contain_text("Succeeded", timeout=10_000)
    rows = {(row["simple_sentence_pk"], row["complex_sentence_pk"]): row for row in _downloaded_jsonl(page, card)}
    shot(page, "export-provenance.png", full_page=True)

    before = rows[(simple[0].pk, suggested.complex_sentence_id)]
    [annotation] = before["annotations"]
    assert annotation["suggestion"] == {
        "run_id": first.pk, "model": "the hand-calibrated aligner on tfidf_cosine", "model_version": first.model_version,
        "kind": "stored", "provenance": "recorded", "predicted_label": suggested.label, "score": suggested.score,
    }  # fmt: skip
    assert before["aligner"]["run_id"] == first.pk != second.pk  # the run she saw, not the re-alignment made after her label
    assert before["aligner"]["model"] == "the hand-calibrated aligner on tfidf_cosine" and before["aligner"]["seen_by"] == ["anna"]
    after = rows[(simple[1].pk, linked.pk)]
    assert after["annotations"][0]["suggestion"]["run_id"] == second.pk
    assert after["annotations"][0]["suggestion"]["model"] == "the hand-calibrated aligner on jaccard"
    proposed = CandidateAlignment.objects.filter(run=second, simple_sentence=simple[1], complex_sentence=linked).exists()
    assert (after["aligner"] or {}).get("run_id") == (second.pk if proposed else None)
