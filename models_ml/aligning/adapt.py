"""Adapting an aligner to a new domain from a few labelled document pairs, never ending worse than it started.

Why a recipe of its own: retraining from zero on the old pairs plus a few new ones lets the old
domain dominate early stopping and thresholds, and a handful of new pairs can wreck what many old
ones taught (the model goes quiet). So:

1. start from the current model (a copy; the caller's aligner is never changed);
2. fine-tune on the new pairs only: the learned scorer is held near its start by its prior
   (:meth:`models_ml.similarity.pair_scorer.LearnedPairScorer.fit`), its bias free to take the new domain's
   share of aligned pairs; the CRF continues from its weights;
3. stop early and pick the "partial" threshold on held-out *new-domain* pairs (one labelled pair
   in ``dev_share`` is held out; with a single labelled pair there is none to hold out, and it is
   both trained and judged on, which the report says);
4. keep the fine-tuned model only when it beats the start on those held-out pairs (group F1, then
   pair F1); otherwise keep the start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import LEARNED
from models_ml.aligning.train import TrainingConfig, TrainingReport, evaluate_aligner, train_aligner
from models_ml.data.io import GoldPair

__all__ = ["AdaptReport", "adapt_aligner"]


@dataclass
class AdaptReport:
    """What :func:`adapt_aligner` did: the held-out figures of both candidates and which was kept."""

    kept: str  # "fine-tuned" | "start"
    start_dev_f1: tuple[float, float]  # (group F1, pair F1) of the start model on the held-out new pairs
    tuned_dev_f1: tuple[float, float]
    dev_pairs: int
    held_out: bool  # False when the only labelled pair was also the one judged on
    training: TrainingReport


def adapt_aligner(
    start: Aligner,
    labelled: Sequence[GoldPair],
    *,
    training: TrainingConfig | None = None,
    seed: int = 0,
    dev_share: float = 0.34,
    features: Sequence[np.ndarray] | None = None,
) -> tuple[Aligner, AdaptReport]:
    """The better of ``start`` and its fine-tuned copy on held-out labelled pairs; ValueError without labels.

    features: optional precomputed pair features of ``labelled`` (learned scorers only).
    """
    if not labelled:
        raise ValueError("adapting needs at least one labelled document pair of the new domain")
    if features is not None and len(features) != len(labelled):
        raise ValueError(f"got features for {len(features)} pairs, expected {len(labelled)}")
    order = list(np.random.default_rng(seed).permutation(len(labelled)))
    dev_count = max(1, round(dev_share * len(labelled))) if len(labelled) > 1 else 0
    dev_index, train_index = order[:dev_count], order[dev_count:]
    held_out = bool(dev_index)
    if not held_out:
        dev_index = train_index
    pick = lambda indices: [labelled[int(k)] for k in indices]  # noqa: E731 - two uses, one line
    pick_features = lambda indices: None if features is None else [features[int(k)] for k in indices]  # noqa: E731 - as pick
    tuned = start.copy()
    report = train_aligner(
        pick(train_index), aligner=tuned, training=training or TrainingConfig(), seed=seed,
        dev_pairs=pick(dev_index), features=pick_features(train_index), dev_features=pick_features(dev_index),
    )  # fmt: skip
    dev_pairs = pick(dev_index)
    start_f1 = _f1(start, dev_pairs, pick_features(dev_index))
    tuned_f1 = _f1(tuned, dev_pairs, pick_features(dev_index))
    kept = "fine-tuned" if tuned_f1 > start_f1 else "start"
    result = AdaptReport(kept, start_f1, tuned_f1, len(dev_pairs), held_out, report)
    return (tuned if kept == "fine-tuned" else start), result


def _f1(aligner: Aligner, pairs: list[GoldPair], features: list[np.ndarray] | None) -> tuple[float, float]:
    similarities = None
    if features is not None and aligner.config.measure == LEARNED:
        similarities = [aligner.measure.logits(f) for f in features]  # type: ignore[attr-defined]
    report = evaluate_aligner(aligner, pairs, similarities)
    return report.group_task1.f1, report.sentence_task1.f1
