"""A learned pair scorer: a logistic regression over :mod:`models_ml.similarity.pair_features`, as a similarity measure.

Why: the CRF's emissions were one measure's raw score, which transfers badly (an English
encoder on German, a symmetric cosine on splits). This scorer turns the features of every
(simple, complex) pair into a log-odds of "this pair is in a gold group"; the CRF sees those
log-odds as its similarity (``emission_scale`` 1), so its null emission is a log-odds threshold.

Fine-tuning for a new domain (:meth:`LearnedPairScorer.fit` with ``start``) keeps the start
model's feature standardisation and penalises ``prior_l2 * ||w - w_start||^2`` instead of
``l2 * ||w||^2``: a few labelled pairs move the weights only as far as they have evidence for,
so they cannot wreck a model trained on many more. The bias is free, because the share of
aligned pairs is exactly what differs between domains.

The fitted parameters are plain lists (:meth:`to_dict`), stored inside the aligner's
config.json, so a saved model stays one directory with checksums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from models_ml.data.io import GoldPair
from models_ml.similarity.pair_features import feature_names, pair_features

__all__ = ["LearnedPairScorer", "ScorerParameters", "gold_pair_matrix", "unit_cosine"]

LOGIT_CLIP = 12.0  # log-odds are clipped to +-12 (p within 6e-6 of 0 or 1) so one pair cannot dominate a CRF path


@dataclass(frozen=True)
class ScorerParameters:
    """Feature names in order, their standardisation, weights and bias."""

    features: tuple[str, ...]
    mean: np.ndarray  # (f,)
    scale: np.ndarray  # (f,)
    weights: np.ndarray  # (f,)
    bias: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": [float(x) for x in self.mean],
            "scale": [float(x) for x in self.scale],
            "weights": [float(x) for x in self.weights],
            "bias": float(self.bias),
        }

    @classmethod
    def from_dict(cls, data: Any) -> ScorerParameters:
        """Inverse of :meth:`to_dict`; ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"scorer parameters must be an object, got {type(data).__name__}")  # bad config content
        missing = [key for key in ("features", "mean", "scale", "weights", "bias") if key not in data]
        if missing:
            raise ValueError(f"scorer parameters lack {', '.join(missing)}")
        features = tuple(data["features"])
        known = feature_names(with_embedding=True)
        unknown = [name for name in features if name not in known]
        if unknown:
            raise ValueError(f"unknown scorer feature(s) {', '.join(map(str, unknown))}")
        if features not in (feature_names(False), feature_names(True)):
            raise ValueError("scorer features must be exactly the lexical set, or the lexical set with the embedding features")
        arrays = {}
        for key in ("mean", "scale", "weights"):
            try:
                array = np.asarray(data[key], dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"scorer parameter {key!r} must be a list of numbers") from None
            if array.shape != (len(features),) or not np.all(np.isfinite(array)):
                raise ValueError(f"scorer parameter {key!r} must hold {len(features)} finite numbers")
            arrays[key] = array
        if np.any(arrays["scale"] <= 0):
            raise ValueError("scorer parameter 'scale' must be positive")
        bias = data["bias"]
        if isinstance(bias, bool) or not isinstance(bias, int | float) or not np.isfinite(bias):
            raise ValueError(f"scorer parameter 'bias' must be a finite number, got {bias!r}")
        return cls(features, arrays["mean"], arrays["scale"], arrays["weights"], float(bias))


def gold_pair_matrix(pair: GoldPair) -> np.ndarray:
    """(m, n) float32: 1 where (simple j, complex i) lie in one gold group (aligned or partial), else 0."""
    labels = np.zeros((len(pair.simple_sentences), len(pair.complex_sentences)), dtype=np.float32)
    for group in pair.groups:
        labels[np.ix_(list(group.simple), list(group.complex))] = 1.0
    return labels


class LearnedPairScorer:
    """Log-odds that a (simple, complex) pair is aligned, from :func:`pair_features`; a similarity measure.

    ``score(simple, complex)`` needs sentence vectors when the model uses the embedding
    features: pass ``embedding_cosine`` (the app has stored vectors), or give the scorer an
    ``encoder`` to compute them.
    """

    name = "learned"

    def __init__(
        self, parameters: ScorerParameters | None = None, *, encoder: Any = None, encoder_factory: Callable[[], Any] | None = None
    ) -> None:
        self.parameters = parameters
        self.encoder = encoder
        self._encoder_factory = encoder_factory  # loads the encoder the first time vectors are needed

    @property
    def uses_embedding(self) -> bool:
        return self.parameters is not None and "embedding_cosine" in self.parameters.features

    def features(
        self,
        simple: Sequence[str],
        complex: Sequence[str],
        embedding_cosine: np.ndarray | None = None,
    ) -> np.ndarray:
        """The (m, n, f) features this model reads (embedding ones only when it uses them); see :func:`pair_features`."""
        if self.uses_embedding and embedding_cosine is None:
            if self.encoder is None and self._encoder_factory is not None:
                self.encoder = self._encoder_factory()
            if self.encoder is None:
                raise ValueError("this pair scorer uses sentence vectors: pass embedding_cosine or give it an encoder")
            embedding_cosine = unit_cosine(self.encoder.encode(list(simple)), self.encoder.encode(list(complex)))
        return pair_features(simple, complex, embedding_cosine if self.uses_embedding else None)

    def score(
        self,
        simple: Sequence[str],
        complex: Sequence[str],
        embedding_cosine: np.ndarray | None = None,
    ) -> np.ndarray:
        """(m, n) float32 log-odds, clipped to +-LOGIT_CLIP."""
        return self.logits(self.features(simple, complex, embedding_cosine))

    def logits(self, features: np.ndarray) -> np.ndarray:
        """Log-odds for features of shape (..., f)."""
        if self.parameters is None:
            raise ValueError("the pair scorer is not fitted")
        p = self.parameters
        if features.shape[-1] != len(p.features):
            raise ValueError(f"features end in {features.shape[-1]} columns, the scorer reads {len(p.features)}")
        values = ((np.asarray(features, dtype=np.float64) - p.mean) / p.scale) @ p.weights + p.bias
        return np.clip(values, -LOGIT_CLIP, LOGIT_CLIP).astype(np.float32)

    def fit(
        self,
        features: Sequence[np.ndarray],
        labels: Sequence[np.ndarray],
        *,
        with_embedding: bool,
        l2: float = 1.0,
        start: ScorerParameters | None = None,
        prior_l2: float = 10.0,
    ) -> LearnedPairScorer:
        """Fit on per-pair (m, n, f) features and (m, n) 0/1 labels; deterministic (L-BFGS, convex).

        Without ``start``: standardise on these features, penalise ``l2 * ||w||^2``. With
        ``start``: keep its standardisation and penalise ``prior_l2 * ||w - w_start||^2`` (the
        fine-tuning of the module docstring). The penalty is per example-count-free: it is
        not scaled with the number of pairs, so more labels move the model further.
        """
        names = feature_names(with_embedding)
        if start is not None and start.features != names:
            raise ValueError("the start model reads other features than the ones given")
        rows = np.concatenate([np.asarray(f, dtype=np.float64).reshape(-1, len(names)) for f in features]) if features else None
        if rows is None or rows.shape[0] == 0:
            raise ValueError("no sentence pairs to fit the pair scorer on")
        y = np.concatenate([np.asarray(label, dtype=np.float64).ravel() for label in labels])
        if y.shape[0] != rows.shape[0]:
            raise ValueError(f"{rows.shape[0]} feature rows but {y.shape[0]} labels")
        if y.min() == y.max():
            raise ValueError("the gold pairs hold only one class (no aligned or no unaligned sentence pair)")
        if start is None:
            mean, scale = rows.mean(axis=0), rows.std(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
            centre, strength, theta0 = np.zeros(len(names)), l2, np.zeros(len(names) + 1)
        else:
            mean, scale = start.mean, start.scale
            centre, strength = start.weights, prior_l2
            theta0 = np.append(start.weights, start.bias)
        standardised = (rows - mean) / scale  # (k, f)

        def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
            weights, bias = theta[:-1], theta[-1]
            logits = standardised @ weights + bias  # (k,)
            offset = weights - centre
            loss = np.sum(np.logaddexp(0.0, logits) - y * logits) + 0.5 * strength * offset @ offset
            residual = special.expit(logits) - y  # (k,)
            return float(loss), np.append(standardised.T @ residual + strength * offset, residual.sum())

        from scipy import optimize  # here, not at the top: only fitting needs it, and it is 0.2-0.3 s of every process's start

        result = optimize.minimize(loss_and_gradient, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500})
        self.parameters = ScorerParameters(names, mean, scale, result.x[:-1].copy(), float(result.x[-1]))
        return self


def unit_cosine(simple_vectors: np.ndarray, complex_vectors: np.ndarray) -> np.ndarray:
    """(m, n) float32 cosines of (m, d) and (n, d) sentence vectors."""
    simple_vectors = np.asarray(simple_vectors, dtype=np.float32)
    complex_vectors = np.asarray(complex_vectors, dtype=np.float32)
    simple_unit = simple_vectors / np.maximum(np.linalg.norm(simple_vectors, axis=1, keepdims=True), 1e-12)  # (m, d)
    complex_unit = complex_vectors / np.maximum(np.linalg.norm(complex_vectors, axis=1, keepdims=True), 1e-12)  # (n, d)
    return (simple_unit @ complex_unit.T).astype(np.float32)  # (m, n)
