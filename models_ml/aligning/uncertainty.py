"""How unsure the aligner is, to choose what people label next (active learning).

The CRF gives each candidate sentence pair a marginal probability p of being aligned
(:attr:`models_ml.aligning.aligner.AlignmentResult.pair_marginals`). Two classic uncertainty scores of a
binary decision:

- entropy: H(p) = -p log2 p - (1-p) log2 (1-p), 1 at p = 0.5, 0 at p in {0, 1};
- margin: 1 - |p - (1-p)| = 1 - |2p - 1|, the gap between the two outcomes turned into a score.

For a binary marginal both are decreasing functions of |p - 0.5|, so they rank single
candidates identically; they differ once averaged over a document pair (entropy weighs
near-certain candidates less). A document pair's score is the mean over its candidates, so
long documents are not preferred for their length alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["METHODS", "binary_entropy", "document_uncertainty", "margin_uncertainty"]

METHODS = ("entropy", "margin")


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in bits of Bernoulli(p), elementwise; 0 at p = 0 and p = 1."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    q = 1.0 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -(np.where(p > 0, p * np.log2(p), 0.0) + np.where(q > 0, q * np.log2(q), 0.0))
    return terms


def margin_uncertainty(p: np.ndarray) -> np.ndarray:
    """1 - |2p - 1| elementwise: 1 when both outcomes are equally likely, 0 when one is certain."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return 1.0 - np.abs(2.0 * p - 1.0)


def document_uncertainty(marginals: Iterable[float], method: str = "entropy") -> float:
    """Mean uncertainty of a document pair's candidate marginals; 0.0 when it has none."""
    if method not in METHODS:
        raise ValueError(f"unknown uncertainty method {method!r}; methods: {', '.join(METHODS)}")
    values = np.fromiter((float(p) for p in marginals), dtype=np.float64)
    if values.size == 0:
        return 0.0
    scores = binary_entropy(values) if method == "entropy" else margin_uncertainty(values)
    return float(scores.mean())
