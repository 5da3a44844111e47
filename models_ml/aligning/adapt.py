"""Adapting an aligner to a new domain from a few labelled document pairs, never ending worse than it started.

Why a recipe of its own. Fine-tuning on a few pairs of a new domain (``train --base``) moves the
learned pair scorer as far as those pairs pull it: its prior toward the start is a fixed
``scorer_prior_l2`` that does not grow with the data it protects, and two fiction pairs are
~18,000 sentence pairs against it. Measured on DEplain-web (bench/deplain_learning_loop.py): in
fiction that halved group F1 on the rest of the domain while pair F1 stayed level, because
the scorer, fitted to free retellings whose gold partners share few words with them, flattens
the scores the CRF's groups rest on; in health the same fine-tuning *helped* (+.08), and a
strong prior that protects fiction (1,000) takes that gain away. No single prior is right for
every domain, so the recipe lets the labelled pairs choose it:

1. candidates: the start itself, and fine-tuned copies for each prior in ``priors`` and each
   number of CRF epochs (0: the scorer alone, up to ``training.epochs``);
2. each candidate is judged by leave-one-pair-out over the labelled pairs (fine-tuned on the
   others, scored on the one left out after every epoch; group F1, then pair F1), so no pair
   judges a model it trained; with a single labelled pair there is nothing to hold out, and it
   is both trained and judged on, which the report says;
3. a fine-tuned candidate is kept only when it beats the start on those held-out figures
   (otherwise the start is returned, unchanged: the guard); its prior and epochs are then used
   to fine-tune on every labelled pair.

The start is never changed; fine-tuning works on copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import LEARNED
from models_ml.aligning.scorer_training import fit_scorer, scorer_features
from models_ml.aligning.train import EpochReport, TrainingConfig, TrainingReport, evaluate_aligner, train_aligner
from models_ml.data.io import GoldPair

__all__ = ["PRIORS", "AdaptReport", "adapt_aligner"]

PRIORS = (10.0, 100.0, 1000.0)  # scorer_prior_l2 candidates: from free to nearly frozen


@dataclass
class AdaptReport:
    """What :func:`adapt_aligner` did: every candidate's held-out figures, and which was kept.

    figures: candidate name ("start", "prior 10, 3 epochs", ...) -> (mean group F1, mean pair F1) on the held-out pairs.
    """

    kept: str  # "fine-tuned" | "start"
    prior: float | None  # the scorer prior of the kept fine-tuned model; None when the start was kept
    epochs: int | None = None  # its epochs of CRF training (0: the scorer alone)
    chosen: str = ""  # the kept candidate's name in ``figures``
    figures: dict[str, tuple[float, float]] = field(default_factory=dict)
    pairs: int = 0
    held_out: bool = True  # False with one labelled pair: nothing to judge a copy on, so the start is kept untried
    training: TrainingReport | None = None

    @property
    def start_f1(self) -> tuple[float, float]:
        return self.figures["start"]

    @property
    def tuned_f1(self) -> tuple[float, float]:
        """The best fine-tuned candidate's figures."""
        return max(value for name, value in self.figures.items() if name != "start")

    def reason(self) -> str:
        """One sentence for the user: what was kept and why."""
        start = self.start_f1
        if not self.held_out:
            return (f"kept the current model: a fine-tuned copy is judged on labelled pairs it did not train on, and there is "
                    f"only one yet (group F1 {start[0]:.3f} on it); adapting starts at two")  # fmt: skip
        scope = f"on {self.pairs} labelled pairs, each held out in turn"
        if self.kept == "start":
            return (f"kept the current model: no fine-tuned copy beat it {scope} "
                    f"(best group F1 {self.tuned_f1[0]:.3f} against {start[0]:.3f})")  # fmt: skip
        tuned = self.figures[self.chosen]
        return (f"fine-tuned (scorer prior {self.prior:g}, {self.epochs} CRF epochs): group F1 {tuned[0]:.3f} against "
                f"the current model's {start[0]:.3f} {scope}")  # fmt: skip


def adapt_aligner(
    start: Aligner,
    labelled: Sequence[GoldPair],
    *,
    training: TrainingConfig | None = None,
    seed: int = 0,
    features: Sequence[np.ndarray] | None = None,
    priors: Sequence[float] = PRIORS,
) -> tuple[Aligner, AdaptReport]:
    """The start or a fine-tuned copy, whichever did best on held-out labelled pairs (see the module docstring).

    features: optional precomputed pair features of ``labelled`` (learned scorers only).
    ValueError without labelled pairs or priors.
    """
    if not labelled:
        raise ValueError("adapting needs at least one labelled document pair of the new domain")
    if not priors:
        raise ValueError("adapting needs at least one scorer prior to try")
    if features is not None and len(features) != len(labelled):
        raise ValueError(f"got features for {len(features)} pairs, expected {len(labelled)}")
    training = training or TrainingConfig()
    folds = _folds(len(labelled))
    held_out = len(labelled) > 1
    report = AdaptReport(kept="start", prior=None, pairs=len(labelled), held_out=held_out)
    report.figures["start"] = _mean_f1([_f1(start, [labelled[h]], _pick(features, [h])) for _, h in folds])
    if not held_out:  # judged on the pair it trained on, a copy looks better than it is: the learning-loop bench saw k = 1 lose
        return start, report
    for prior in priors:  # each prior's held-out curve over the epochs: (group F1, pair F1) per epoch, averaged over folds
        curves = [_held_out_curve(start, labelled, fold, replace(training, scorer_prior_l2=prior), seed, features) for fold in folds]
        for epoch in range(min(len(curve) for curve in curves)):
            report.figures[f"prior {prior:g}, {epoch} epochs"] = _mean_f1([curve[epoch] for curve in curves])
    best = max((name for name in report.figures if name != "start"), key=lambda name: report.figures[name])
    if report.figures[best] <= report.start_f1:
        return start, report
    prior, epochs = _parse_candidate(best)
    everything = list(range(len(labelled)))
    adapted, report.training = _fine_tuned(start, labelled, everything, replace(training, scorer_prior_l2=prior, epochs=max(1, epochs)),
                                           seed, features, scorer_only=epochs == 0)  # fmt: skip
    report.kept, report.prior, report.epochs, report.chosen = "fine-tuned", prior, epochs, best
    return adapted, report


def _folds(count: int) -> list[tuple[list[int], int]]:
    """(pairs to train on, the pair held out) for leave-one-pair-out; one pair trains and judges itself."""
    if count == 1:
        return [([0], 0)]
    return [([k for k in range(count) if k != held], held) for held in range(count)]


def _pick(features: Sequence[np.ndarray] | None, indices: Sequence[int]) -> list[np.ndarray] | None:
    return None if features is None else [features[k] for k in indices]


def _held_out_curve(
    start: Aligner, labelled: Sequence[GoldPair], fold: tuple[list[int], int], training: TrainingConfig, seed: int,
    features: Sequence[np.ndarray] | None,
) -> list[tuple[float, float]]:  # fmt: skip
    """(group F1, pair F1) of the held-out pair after 0, 1, ... epochs of fine-tuning on the fold's other pairs.

    The held-out pair is the dev pair only to be scored after every epoch: training never stops on it
    (patience beyond the epochs), and the fold's model is thrown away.
    """
    train_index, held = fold
    curve: list[tuple[float, float]] = []

    def record(epoch: EpochReport) -> None:
        if epoch.dev is not None:
            curve.append((epoch.dev.group_task1.f1, epoch.dev.sentence_task1.f1))

    train_aligner(
        [labelled[k] for k in train_index], aligner=start.copy(), training=replace(training, patience=training.epochs + 1), seed=seed,
        features=_pick(features, train_index), dev_pairs=[labelled[held]], dev_features=_pick(features, [held]), on_epoch=record,
    )  # fmt: skip
    return curve


def _parse_candidate(name: str) -> tuple[float, int]:
    prior, epochs = name.removeprefix("prior ").split(", ")
    return float(prior), int(epochs.removesuffix(" epochs"))


def _fine_tuned(
    start: Aligner, labelled: Sequence[GoldPair], indices: list[int], training: TrainingConfig, seed: int,
    features: Sequence[np.ndarray] | None, *, scorer_only: bool = False,
) -> tuple[Aligner, TrainingReport | None]:  # fmt: skip
    """A copy of ``start`` fine-tuned on the pairs at ``indices`` for ``training.epochs`` (no dev pair to stop on);
    ``scorer_only``: the learned scorer alone (the CRF as it was: "0 epochs")."""
    tuned = start.copy()
    pairs = [labelled[k] for k in indices]
    if scorer_only and tuned.config.measure == LEARNED:
        fit_scorer(tuned, pairs, _pick(features, indices) or scorer_features(tuned, pairs), l2=training.scorer_l2,
                   prior_l2=training.scorer_prior_l2)  # fmt: skip
        return tuned, None
    if scorer_only:
        return tuned, None  # nothing but the CRF to train, and it stays as it was
    return tuned, train_aligner(pairs, aligner=tuned, training=training, seed=seed, features=_pick(features, indices))


def _f1(aligner: Aligner, pairs: list[GoldPair], features: list[np.ndarray] | None) -> tuple[float, float]:
    similarities = None
    if features is not None and aligner.config.measure == LEARNED:
        similarities = [aligner.measure.logits(f) for f in features]  # type: ignore[attr-defined]
    report = evaluate_aligner(aligner, pairs, similarities)
    return report.group_task1.f1, report.sentence_task1.f1


def _mean_f1(scores: list[tuple[float, float]]) -> tuple[float, float]:
    return float(np.mean([s[0] for s in scores])), float(np.mean([s[1] for s in scores]))
