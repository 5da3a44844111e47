"""The optimisation settings of :func:`models_ml.aligning.train.train_aligner`, apart from it: a training job can be
checked and stored (by the web request that queues it) without importing torch, which costs a process two seconds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainingConfig:
    """Optimisation settings; the seed is an argument of :func:`train_aligner`, not part of the config.

    epochs: passes over all training blocks (Adam, one step per block, shuffled each epoch).
    lr: Adam's learning rate. The CRF's parameters live on the scale of ``emission_scale *
        similarity`` (about -20..20). 0.05 was best of 0.005 / 0.02 / 0.05 / 0.1 for 10 epochs
        on DEplain-web dev under document-level cross-validation (bench/deplain_aligner.py).
    tune_partial_threshold: after training, pick the aligner's ``partial_threshold`` on the
        training pairs (Task-2 sentence-pair F1, grid 0.0..1.0 step 0.05, lowest on ties).
    patience: with dev pairs, stop after this many epochs without a better dev group F1
        (ties broken by the dev log-likelihood); the best epoch's weights (0 = as given) are kept.
    scorer_l2 / scorer_prior_l2: with ``measure="learned"``, the pair scorer's penalty when it is
        fitted from zero / fine-tuned from the aligner's current scorer (toward its weights).
    """

    epochs: int = 10
    lr: float = 0.05
    tune_partial_threshold: bool = True
    patience: int = 3
    scorer_l2: float = 1.0
    scorer_prior_l2: float = 10.0

    def __post_init__(self) -> None:
        if self.scorer_l2 < 0 or self.scorer_prior_l2 < 0:
            raise ValueError(f"scorer_l2 and scorer_prior_l2 must be >= 0, got {self.scorer_l2} and {self.scorer_prior_l2}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.patience < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
