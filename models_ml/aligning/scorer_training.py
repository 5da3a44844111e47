"""Fitting the learned pair scorer of an aligner before its CRF is trained (see :func:`models_ml.aligning.train.train_aligner`).

Why separate: the CRF trains on similarity matrices; with ``measure="learned"`` those matrices
are the scorer's log-odds, so the scorer must be fitted first, on the same training pairs, and
the CRF then sees exactly what inference will give it. An aligner that already has a scorer
(a saved model given as ``--base``, the app's active version) is fine-tuned from it (the prior
of :meth:`models_ml.similarity.pair_scorer.LearnedPairScorer.fit`), never refitted from zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import LEARNED
from models_ml.data.io import GoldPair
from models_ml.similarity.pair_features import pair_features
from models_ml.similarity.pair_scorer import LearnedPairScorer, ScorerParameters, gold_pair_matrix, unit_cosine

__all__ = ["fit_scorer", "scorer_features"]


def _with_embedding(aligner: Aligner) -> bool:
    if aligner.config.scorer is not None:
        return "embedding_cosine" in aligner.config.scorer["features"]
    return aligner.config.scorer_embedding


def scorer_features(aligner: Aligner, pairs: Sequence[GoldPair]) -> list[np.ndarray]:
    """(m, n, f) pair features of every pair, as the aligner's scorer reads them (vectors from its encoder)."""
    encoder = aligner.load_encoder() if _with_embedding(aligner) and pairs else None
    features = []
    for pair in pairs:
        cosine = None
        if encoder is not None and pair.simple_sentences and pair.complex_sentences:
            cosine = unit_cosine(encoder.encode(pair.simple_sentences), encoder.encode(pair.complex_sentences))  # (m, n)
        elif encoder is not None:
            cosine = np.zeros((len(pair.simple_sentences), len(pair.complex_sentences)), dtype=np.float32)
        features.append(pair_features(pair.simple_sentences, pair.complex_sentences, cosine))
    return features


def fit_scorer(
    aligner: Aligner, pairs: Sequence[GoldPair], features: Sequence[np.ndarray], *, l2: float, prior_l2: float
) -> list[np.ndarray]:
    """Fit (or fine-tune) the aligner's scorer on the pairs; sets ``aligner.config.scorer`` and returns
    each pair's (m, n) log-odds for CRF training. ValueError when the pairs hold only one class."""
    if aligner.config.measure != LEARNED:
        raise ValueError(f"fit_scorer needs measure {LEARNED!r}, the aligner uses {aligner.config.measure!r}")
    if len(features) != len(pairs):
        raise ValueError(f"got features for {len(features)} pairs, expected {len(pairs)}")
    start = ScorerParameters.from_dict(aligner.config.scorer) if aligner.config.scorer is not None else None
    scorer = LearnedPairScorer().fit(
        features, [gold_pair_matrix(pair) for pair in pairs], with_embedding=_with_embedding(aligner),
        l2=l2, start=start, prior_l2=prior_l2,
    )  # fmt: skip
    assert scorer.parameters is not None
    aligner.config = replace(aligner.config, scorer=scorer.parameters.to_dict())
    return [scorer.logits(f) for f in features]
