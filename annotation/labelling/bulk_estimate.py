"""How often a suggestion at or above a confidence is right, and the threshold that meets a precision target.

Plain arithmetic over answered suggestions, apart from the database (:mod:`annotation.labelling.bulk` reads them),
so that ``bench/annotator_keys.py`` decides exactly as the screen does.

An *answered suggestion* is a sentence pair the aligner suggested (aligned or partial) with its confidence, on a
document pair an annotator has marked done: it was **right** when the annotator's label of it is the suggested
label, wrong otherwise (a different label, or none: unlabelled counts as not aligned once the pair is done).
Labels made by bulk accept are no evidence and are left out by the reader, unless a reviewer has decided the sentence
pair since (a spot check): that decision is the answer.

The estimate at a threshold ``t`` is over the answered suggestions with confidence ≥ ``t``: the share right,
smoothed as the mean of a Beta(1, 1) posterior (``(right + 1) / (count + 2)``, so that 20 of 20 right reads .95,
not 1.0), with a 95 % Wilson interval. The threshold chosen for a target is the lowest one on a grid of
hundredths whose estimate meets the target with at least ``MIN_ANSWERED`` answers above it: the most suggestions
accepted at the precision asked for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

MIN_ANSWERED = 30  # answered suggestions at or above a threshold before an estimate there is used
GRID = tuple(round(0.5 + k / 100, 2) for k in range(50))  # 0.50 .. 0.99: a suggestion below .5 is not one the CRF believes
Z95 = 1.959964


@dataclass(frozen=True)
class PrecisionEstimate:
    """The estimated precision of suggestions with confidence ≥ ``threshold``, from ``count`` answers (``right`` right)."""

    threshold: float
    count: int
    right: int
    basis: str  # "project": this project's answered suggestions; "model": the model's held-out calibration

    @property
    def precision(self) -> float:
        return (self.right + 1) / (self.count + 2)

    @property
    def interval(self) -> tuple[float, float]:
        """95 % Wilson score interval of the share right."""
        if self.count == 0:
            return (0.0, 1.0)
        share, n = self.right / self.count, self.count
        centre = (share + Z95 * Z95 / (2 * n)) / (1 + Z95 * Z95 / n)
        half = Z95 * math.sqrt(share * (1 - share) / n + Z95 * Z95 / (4 * n * n)) / (1 + Z95 * Z95 / n)
        return (max(0.0, centre - half), min(1.0, centre + half))

    def as_dict(self) -> dict[str, object]:
        low, high = self.interval
        return {
            "threshold": self.threshold, "precision": round(self.precision, 4), "low": round(low, 4), "high": round(high, 4),
            "count": self.count, "right": self.right, "basis": self.basis,
        }  # fmt: skip


def estimate_at(answers: Iterable[tuple[float, bool]], threshold: float, *, basis: str = "project") -> PrecisionEstimate:
    """The estimate over the ``(confidence, right)`` answers with confidence ≥ ``threshold``."""
    above = [right for confidence, right in answers if confidence >= threshold]
    return PrecisionEstimate(threshold, len(above), sum(above), basis)


def threshold_for(answers: Iterable[tuple[float, bool]], target: float, *, basis: str = "project") -> PrecisionEstimate | None:
    """The lowest grid threshold whose estimate meets ``target`` on at least :data:`MIN_ANSWERED` answers; None: none does."""
    ordered = sorted(((float(c), bool(r)) for c, r in answers), reverse=True)  # most confident first
    count = right = 0
    best: PrecisionEstimate | None = None
    position = 0
    for threshold in reversed(GRID):  # 0.99 down to 0.50, counting the answers at or above each
        while position < len(ordered) and ordered[position][0] >= threshold:
            count, right = count + 1, right + ordered[position][1]
            position += 1
        estimate = PrecisionEstimate(threshold, count, right, basis)
        if count >= MIN_ANSWERED and estimate.precision >= target:
            best = estimate
    return best


def offer_threshold(
    answers: list[tuple[float, bool]], target: float, calibration: list[tuple[float, bool]] | None
) -> PrecisionEstimate | None:
    """The threshold a project is offered: its own answers' (:func:`threshold_for`), else the model's held-out
    ``calibration``'s while the project has fewer than :data:`MIN_ANSWERED` answers at the threshold that chooses
    (with that many, and no threshold of its own, its answers say the model is wrong more often here: nothing)."""
    own = threshold_for(answers, target)
    if own is not None:
        return own
    fallback = threshold_for(calibration, target, basis="model") if calibration else None
    if fallback is None or estimate_at(answers, fallback.threshold).count >= MIN_ANSWERED:
        return None
    return fallback
