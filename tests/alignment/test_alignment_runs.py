"""Alignment runs executed by a real Procrastinate worker: results, failure and resume, cancel, history."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from alignment.aligning import scoring
from alignment.aligning import service as aligning_service
from alignment.aligning.service import alignment_run_cancel, alignment_run_create, alignment_run_retry
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair, ParagraphAlignment
from alignment.services import corpus_get_or_create
from models_ml.similarity.measures import JaccardSimilarity
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG


def _texts(candidate: CandidateAlignment) -> tuple[str, str]:
    return candidate.simple_sentence.text, candidate.complex_sentence.text


def test_worker_aligns_every_pair_and_stores_scored_candidates(stories, run_worker):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert (run.pairs_total, run.pairs_done) == (3, 3)
    assert AlignedPair.objects.filter(run=run).count() == 3
    assert ParagraphAlignment.objects.filter(run=run).count() == 3
    candidates = CandidateAlignment.objects.filter(run=run).select_related("simple_sentence", "complex_sentence")
    assert run.candidates_written == candidates.count() > 0
    assert sum(run.label_counts.values()) == run.candidates_written
    predicted = {_texts(c) for c in candidates if c.label != "not_aligned"}
    assert ("They collect nectar.", "Honeybees visit thousands of flowers every day to collect nectar.") in predicted
    assert ("The school was closed for two days.", "The school stayed closed for two days.") in predicted
    assert ("The school was closed for two days.", "Heavy rain flooded the main road through the village on Monday.") not in predicted
    one = candidates.first()
    assert set(one.scores) == set(LEXICAL) and one.score == one.scores["tfidf_cosine"]
    assert 0.0 <= one.crf_marginal <= 1.0 and 0.0 <= one.disagreement <= 1.0
    assert run.pairs_per_second is not None and run.busy_seconds > 0


def test_split_is_one_group_with_two_simple_sentences(stories, run_worker):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    bees = DocumentPair.objects.get(corpus=stories, complex_document__external_id="Bees")
    first = CandidateAlignment.objects.filter(run=run, pair=bees, complex_sentence__index=0).exclude(label="not_aligned")
    group_of = {c.simple_sentence.index: c.group_index for c in first}
    assert {0, 1} <= set(group_of) and group_of[0] == group_of[1] is not None


def test_failed_run_keeps_finished_pairs_and_resume_aligns_only_the_rest(stories, run_worker, monkeypatch):
    calls = {"count": 0}
    real_score = scoring.PairScorer.score

    def failing_second_pair(self, simple, complex_side):
        calls["count"] += 1
        if calls["count"] == 2:
            raise MemoryError("simulated out-of-memory on the second pair")
        return real_score(self, simple, complex_side)

    monkeypatch.setattr(scoring.PairScorer, "score", failing_second_pair)
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.FAILED
    assert "MemoryError: simulated out-of-memory" in run.error
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 1
    first_candidates = set(CandidateAlignment.objects.filter(run=run).values_list("pk", flat=True))

    alignment_run_retry(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED and run.attempts == 2
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() == 3
    assert calls["count"] == 4  # 2 on the first attempt, the 2 missing pairs on the second
    assert first_candidates <= set(CandidateAlignment.objects.filter(run=run).values_list("pk", flat=True))


def test_a_measure_that_scores_nan_fails_the_run_naming_it_and_the_pair_and_stores_none_of_that_pair(stories, run_worker, monkeypatch):
    """A NaN would make the CRF's choices undefined and is no jsonb number: the run stops with a message naming the
    measure and the document pair; the pairs aligned before it stay, and a retry with a sound measure finishes."""
    real_score = JaccardSimilarity.score

    def nan_for_rain(self, simple, complex_):
        scores = real_score(self, simple, complex_)
        if any("Rain" in sentence for sentence in simple):
            scores[0, 0] = np.nan
        return scores

    monkeypatch.setattr(JaccardSimilarity, "score", nan_for_rain)
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    rain = DocumentPair.objects.get(corpus=stories, complex_document__title__startswith="Rain")
    assert run.status == AlignmentRun.Status.FAILED
    assert f"document pair {rain} (id {rain.pk}): the measure 'jaccard' gave scores that are not finite numbers" in run.error
    assert not AlignedPair.objects.filter(run=run, pair=rain).exists()
    assert not CandidateAlignment.objects.filter(run=run, simple_sentence__document=rain.simple_document).exists()
    assert run.pairs_done == AlignedPair.objects.filter(run=run).count() < 3

    monkeypatch.setattr(JaccardSimilarity, "score", real_score)
    alignment_run_retry(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED and run.pairs_done == AlignedPair.objects.filter(run=run).count() == 3


def test_cancel_request_stops_a_running_run_between_pairs_and_resume_finishes_it(stories, run_worker, monkeypatch):
    real_score = scoring.PairScorer.score

    def cancel_after_first(self, simple, complex_side):
        outcome = real_score(self, simple, complex_side)
        alignment_run_cancel(run=AlignmentRun.objects.get())
        time.sleep(aligning_service.STOP_CHECK_SECONDS)  # a run looks for a cancel this often between pairs
        return outcome

    monkeypatch.setattr(scoring.PairScorer, "score", cancel_after_first)
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and run.pairs_done == 1
    monkeypatch.setattr(scoring.PairScorer, "score", real_score)
    alignment_run_retry(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.SUCCEEDED and run.pairs_done == 3


def test_queued_run_cancelled_before_a_worker_picks_it_does_nothing(stories, run_worker):
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    alignment_run_cancel(run=run)
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == AlignmentRun.Status.CANCELLED and run.pairs_done == 0
    assert not AlignedPair.objects.filter(run=run).exists()


def test_a_new_run_keeps_the_older_runs_results(stories, run_worker):
    first = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    kept = CandidateAlignment.objects.filter(run=first).count()
    second = alignment_run_create(corpus=stories, aligner_config={**TFIDF_CONFIG, "null_score": 0.3}, measures=["jaccard"])
    run_worker(["alignment"])
    assert CandidateAlignment.objects.filter(run=first).count() == kept > 0
    assert CandidateAlignment.objects.filter(run=second).exists()
    second.refresh_from_db()
    assert second.measures == ["tfidf_cosine", "jaccard"]  # the CRF's measure is always scored


def test_rerunning_a_finished_run_changes_nothing(stories, run_worker):
    from alignment.aligning.service import alignment_run_execute

    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    run_worker(["alignment"])
    before = CandidateAlignment.objects.filter(run=run).count()
    alignment_run_execute(run_id=run.pk, build_measure=lambda name, aligner: None)
    assert CandidateAlignment.objects.filter(run=run).count() == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"measures": ["no_such_measure"]}, "unknown similarity measure 'no_such_measure'"),
        ({"aligner_config": {"measure": "tfidf_cosine", "emission_scale": -1}}, "emission_scale must be > 0"),
        ({"aligner_config": {"bogus": 1}}, "unknown aligner config key 'bogus'"),
        ({"model_dir": "/nonexistent/model"}, "model directory /nonexistent/model"),
    ],
)
def test_bad_run_config_is_rejected_before_anything_is_stored(stories, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        alignment_run_create(corpus=stories, **kwargs)
    assert not AlignmentRun.objects.exists()


def test_run_on_a_corpus_without_pairs_is_rejected(owner):
    corpus, _ = corpus_get_or_create(name="Empty", language="en", owner=owner)
    with pytest.raises(ValueError, match="has no document pairs"):
        alignment_run_create(corpus=corpus)


def test_pairs_of_another_corpus_are_rejected(stories, tram_corpus):
    foreign = list(tram_corpus.pairs.all())
    with pytest.raises(ValueError, match="do not belong to corpus 'Stories'"):
        alignment_run_create(corpus=stories, pairs=foreign)
    assert not AlignmentRun.objects.exists()


def test_cross_encoder_measure_is_refused_without_a_fine_tuned_classifier(stories, settings):
    settings.CROSS_ENCODER_MODEL_DIR = ""
    with pytest.raises(ValueError, match="cross_encoder measure needs a fine-tuned pair classifier"):
        alignment_run_create(corpus=stories, measures=["jaccard", "cross_encoder"])
    assert not AlignmentRun.objects.exists()


def test_run_with_a_trained_model_directory_uses_its_weights(stories, run_worker, tmp_path):
    from models_ml.aligning.aligner import Aligner
    from models_ml.aligning.aligner_config import AlignerConfig

    trained = Aligner(AlignerConfig(measure="tfidf_cosine", null_score=0.15, paragraph_variant="none", device="cpu"))
    with torch.no_grad():
        trained.crf.null_emission.fill_(1e6)  # a "model" that leaves every sentence unaligned
    trained.save(tmp_path / "model")
    run = alignment_run_create(corpus=stories, model_dir=str(tmp_path / "model"), measures=["jaccard"])
    assert str((tmp_path / "model").resolve()) in run.model_version and "sha256" in run.model_version
    assert run.config["aligner"]["measure"] == "tfidf_cosine"  # the saved config, not the default
    run_worker(["alignment"])
    run.refresh_from_db()
    assert run.status == "succeeded" and run.candidates_written > 0
    assert set(run.label_counts) == {"not_aligned"}
