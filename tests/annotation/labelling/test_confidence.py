"""What annotators read of a suggestion: a 0–1 confidence in the label the aligner predicted, never the raw score."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

import alignment.aligning.service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, CandidateAlignment
from annotation.labelling.confidence import CRF, GROUP, MINED, NOT_SCORED, Confidence, confidence_of, confidences
from tests.annotation.conftest import tram_project


def _candidate(label: str, marginal: float, group_score: float | None = None) -> CandidateAlignment:
    return CandidateAlignment(label=label, crf_marginal=marginal, group_score=group_score, score=-1.021)


@pytest.mark.parametrize(
    ("label", "marginal", "tag", "mined", "expected"),
    [
        ("aligned", 0.83, None, False, Confidence(0.83, CRF)),
        ("partial", 0.41, None, False, Confidence(0.41, CRF)),
        ("not_aligned", 0.2, None, False, Confidence(0.8, CRF)),  # the probability that "not aligned" is right
        ("aligned", 0.0, "via group", False, Confidence(0.9, GROUP)),  # its own marginal is 0: the group's figure
        ("not_aligned", 0.0, "not scored", False, Confidence(None, NOT_SCORED)),  # outside the aligned paragraphs
        ("aligned", 1.0, None, True, Confidence(None, MINED)),  # a mined "marginal" is a clipped mining score
    ],
)
def test_the_confidence_is_the_probability_of_the_predicted_label(label, marginal, tag, mined, expected):
    got = confidence_of(_candidate(label, marginal, group_score=0.9), tag, mined=mined)
    assert got.basis == expected.basis
    assert got.value == pytest.approx(expected.value) if expected.value is not None else got.value is None


def test_how_the_confidence_reads():
    assert Confidence(0.834, CRF).text == "confidence 0.83"
    assert Confidence(0.71, GROUP).text == "confidence 0.71 (group)"
    assert (
        Confidence(None, NOT_SCORED).text == "not scored" and "outside the aligned paragraphs" in Confidence(None, NOT_SCORED).explanation
    )
    assert Confidence(None, MINED).text == "mined, not scored"


def test_the_screen_gives_each_candidate_its_confidence_and_marks_those_outside_the_aligned_paragraphs(
    client, tram_corpus, owner, annotator, monkeypatch
):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    run = aligning.alignment_run_create(
        corpus=tram_corpus,
        aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine"],
    )
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    project, pair, *_ = tram_project(tram_corpus, owner, [annotator], "Confidence")
    project.suggestion_run = run
    project.save()
    client.force_login(annotator)
    page = client.get(reverse("annotation:annotate_pair", kwargs={"project_id": project.pk, "pair_id": pair.pk})).content.decode()
    payload = json.loads(page.split('<script id="annotate-data" type="application/json">')[1].split("</script>")[0])
    shown = {(int(simple), entry["complex"]): entry for simple, entries in payload["candidates"].items() for entry in entries}
    candidates = CandidateAlignment.objects.filter(run=run).select_related("pair", "simple_sentence", "complex_sentence")
    expected = confidences(run, candidates)
    bases = set()
    for candidate in candidates:
        entry = shown[(candidate.simple_sentence_id, candidate.complex_sentence_id)]
        assert (entry["confidence"], entry["basis"]) == (expected[candidate.pk].as_dict()["confidence"], expected[candidate.pk].basis)
        if entry["basis"] == CRF:
            linked = candidate.crf_marginal if candidate.label != "not_aligned" else 1 - candidate.crf_marginal
            assert entry["confidence"] == pytest.approx(linked, abs=1e-3) and 0 <= entry["confidence"] <= 1
        bases.add(entry["basis"])
    assert {CRF, NOT_SCORED} <= bases  # the tram pair has paragraphs the run left unaligned
