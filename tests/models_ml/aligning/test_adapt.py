"""Adapting to a new domain: fine-tuned copies with several priors, judged leave-one-pair-out, never a worse model."""

from __future__ import annotations

import pytest

from models_ml.aligning.adapt import adapt_aligner
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig, learned_config
from models_ml.aligning.train import TrainingConfig, evaluate_aligner, train_aligner
from tests.models_ml.similarity.test_pair_scorer import PAIRS


def test_a_start_that_links_nothing_is_replaced_by_its_fine_tuned_copy() -> None:
    start = Aligner(AlignerConfig(measure="char3_tfidf_cosine", device="cpu", null_score=0.99, paragraph_variant="none"), seed=0)
    assert evaluate_aligner(start, PAIRS[3:]).group_task1.f1 == 0.0
    weights_before = {name: value.clone() for name, value in start.crf.state_dict().items()}
    adapted, report = adapt_aligner(start, PAIRS[:3], training=TrainingConfig(epochs=5), seed=0, priors=(10.0,))
    assert report.kept == "fine-tuned" and report.held_out and report.pairs == 3 and report.prior == 10.0
    assert report.tuned_f1 > report.start_f1 and set(report.figures) == {"start"} | {f"prior 10, {e} epochs" for e in range(6)}
    assert report.figures[report.chosen] == report.tuned_f1 and report.chosen == f"prior 10, {report.epochs} epochs"
    assert "fine-tuned (scorer prior 10" in report.reason() and "each held out in turn" in report.reason()
    assert adapted is not start and evaluate_aligner(adapted, PAIRS[3:]).group_task1.f1 > 0.5
    assert all((weights_before[name] == value).all() for name, value in start.crf.state_dict().items())  # start untouched


def test_the_start_is_kept_unless_the_copy_wins_on_the_held_out_pairs() -> None:
    start = Aligner(learned_config(device="cpu", scorer_embedding=False), seed=0)
    train_aligner(PAIRS[:3], aligner=start, training=TrainingConfig(epochs=3), seed=0)
    adapted, report = adapt_aligner(start, PAIRS[3:], training=TrainingConfig(epochs=2), seed=0)
    assert report.held_out and report.pairs == len(PAIRS[3:]) >= 2
    assert {name.split(",")[0] for name in report.figures} == {"start", "prior 10", "prior 100", "prior 1000"}
    if report.kept == "start":
        assert adapted is start and report.tuned_f1 <= report.start_f1 and report.prior is None
        assert "kept the current model" in report.reason() and "each held out in turn" in report.reason()
    else:
        assert report.tuned_f1 > report.start_f1


def test_one_labelled_pair_keeps_the_start_untried_and_says_why() -> None:
    """A copy trained and judged on the same pair looks better than it is (k = 1 lost group F1 in the learning-loop bench)."""
    start = Aligner(AlignerConfig(measure="char3_tfidf_cosine", device="cpu", null_score=0.99, paragraph_variant="none"), seed=0)
    adapted, report = adapt_aligner(start, PAIRS[:1], training=TrainingConfig(epochs=2), seed=0)
    assert adapted is start and report.kept == "start" and not report.held_out and set(report.figures) == {"start"}
    assert "only one yet" in report.reason() and "adapting starts at two" in report.reason()


def test_adapting_needs_labels() -> None:
    start = Aligner(AlignerConfig(measure="jaccard", device="cpu"), seed=0)
    with pytest.raises(ValueError, match="at least one labelled document pair"):
        adapt_aligner(start, [])
    with pytest.raises(ValueError, match="at least one scorer prior"):
        adapt_aligner(start, PAIRS[:1], priors=())


@pytest.mark.slow
def test_a_fine_tuned_copy_that_held_out_pairs_judge_worse_is_not_kept() -> None:
    """A start that already aligns the pairs perfectly: no copy can beat it held out, so the start itself comes back."""
    start = Aligner(learned_config(device="cpu", scorer_embedding=False), seed=0)
    train_aligner(PAIRS, aligner=start, training=TrainingConfig(epochs=5), seed=0)
    if evaluate_aligner(start, PAIRS[:3]).group_task1.f1 < 1.0:
        pytest.skip("the fixture pairs are not all aligned perfectly by the start")  # the premise, not the behaviour
    adapted, report = adapt_aligner(start, PAIRS[:3], training=TrainingConfig(epochs=2), seed=0)
    assert adapted is start and report.kept == "start" and report.prior is None
