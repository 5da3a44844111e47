"""Scores annotators can read, in Chromium: every suggestion on the annotation screen, in its jump list and in the queue
shows the aligner's 0–1 confidence in the label it predicted (the CRF marginal, or 1 − it for "not aligned"), or says
"not scored" outside the aligned paragraphs; never the raw score, whose sign may contradict the label."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from alignment.models import CandidateAlignment
from annotation.labelling.confidence import CRF, NOT_SCORED, confidences
from tests.e2e.test_annotate_in_browser import _login, _screen_url
from tests.e2e.test_keyboard_flow_in_browser import twenty_sentence_pair  # noqa: F401 - a fixture

RAW_SCORE = re.compile(r"score\s*[-−]?\d")


def _expected(candidate: CandidateAlignment, basis: str) -> str:
    if basis == NOT_SCORED:
        return "not scored"
    linked = candidate.crf_marginal if candidate.label != "not_aligned" else 1 - candidate.crf_marginal  # P(its label)
    return f"confidence {linked:.2f}"


def test_suggestions_show_the_confidence_in_their_own_label_on_the_screen_the_jump_list_and_the_queue(
    page: Page, live_server, twenty_sentence_pair
):
    project, pair, run = twenty_sentence_pair
    simple = list(pair.simple_document.sentences.order_by("index"))
    target = simple[5]  # its candidates: the suggestion and near misses, one outside the aligned paragraphs
    candidates = list(
        CandidateAlignment.objects.filter(run=run, simple_sentence=target).select_related("pair", "simple_sentence", "complex_sentence")
    )
    bases = {pk: sure.basis for pk, sure in confidences(run, candidates).items()}
    assert {CRF, NOT_SCORED} <= set(bases.values()) and {"aligned", "not_aligned"} <= {c.label for c in candidates}
    _login(page, live_server, "anna", "anna-pass-123")
    page.goto(_screen_url(live_server, project, pair))
    expect(page.locator("#annotate[data-ready]")).to_be_attached()
    for _ in range(6):
        page.keyboard.press("j")
    expect(page.locator(f"#s-{target.pk}")).to_have_class(re.compile(r"\bselected\b"))
    for candidate in candidates:
        label = {"aligned": "aligned", "partial": "partial", "not_aligned": "not aligned"}[candidate.label]
        badge = page.locator(f"#c-{candidate.complex_sentence_id} .badge.suggestion")
        expect(badge).to_have_text(f"suggested {label} · {_expected(candidate, bases[candidate.pk])}")
    best = next(c for c in candidates if c.label == "aligned")
    expect(page.locator("#current-pair")).to_contain_text(f"suggested: aligned · {_expected(best, bases[best.pk])}")
    expect(page.locator("#annotate")).not_to_contain_text(RAW_SCORE)

    page.keyboard.press("g")  # the jump list marks the same suggestions
    expect(page.locator(f"#jump-{best.complex_sentence_id} .badge")).to_have_text(f"suggested aligned · {_expected(best, bases[best.pk])}")
    page.keyboard.press("Escape")

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/queue/?order=disagreement")
    item = CandidateAlignment.objects.select_related("pair", "simple_sentence", "complex_sentence").get(
        pk=page.locator('#queue-form input[name="item_id"]').get_attribute("value")
    )
    basis = confidences(run, [item])[item.pk].basis
    expect(page.locator("#queue-confidence")).to_have_text(_expected(item, basis))
    expect(page.locator("#queue-suggestion")).not_to_contain_text(RAW_SCORE)
