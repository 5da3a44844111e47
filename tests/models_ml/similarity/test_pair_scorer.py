"""The learned pair scorer: fitting, fine-tuning near its start, parameters checked, and the aligner that uses it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig, learned_config
from models_ml.aligning.train import TrainingConfig, evaluate_aligner, train_aligner
from models_ml.data.io import AlignmentGroup, GoldPair
from models_ml.similarity.pair_features import feature_names, pair_features
from models_ml.similarity.pair_scorer import LearnedPairScorer, ScorerParameters, gold_pair_matrix

TOPICS = [
    ("Der Bürgermeister eröffnet heute die neue Brücke über den Fluss.", ["Heute ist eine neue Brücke fertig.", "Der Bürgermeister eröffnet die Brücke."]),
    ("Viele Kinder spielen am Nachmittag Fußball im großen Park.", ["Viele Kinder spielen Fußball im Park."]),
    ("Das Museum zeigt ab Montag alte Bilder aus Italien.", ["Das Museum zeigt alte Bilder.", "Die Bilder kommen aus Italien."]),
    ("Im Winter schneit es in den Bergen sehr viel.", ["In den Bergen schneit es im Winter viel."]),
    ("Der Bäcker backt jeden Morgen frisches Brot für das Dorf.", ["Der Bäcker backt jeden Morgen Brot."]),
]  # fmt: skip


def gold_pair(pair_id: str, topics: list[tuple[str, list[str]]], extra_simple: str | None = None) -> GoldPair:
    complex_sentences, simple_sentences, groups = [], [], []
    for complex_sentence, parts in topics:
        first = len(simple_sentences)
        simple_sentences.extend(parts)
        groups.append(AlignmentGroup((len(complex_sentences),), tuple(range(first, len(simple_sentences)))))
        complex_sentences.append(complex_sentence)
    if extra_simple is not None:
        simple_sentences.append(extra_simple)
    return GoldPair(pair_id, complex_sentences, simple_sentences, groups, None, None)


PAIRS = [gold_pair(str(k), TOPICS[k:] + TOPICS[:k], "Das ist alles.") for k in range(len(TOPICS))]


def fitted(pairs: list[GoldPair]) -> LearnedPairScorer:
    features = [pair_features(p.simple_sentences, p.complex_sentences) for p in pairs]
    return LearnedPairScorer().fit(features, [gold_pair_matrix(p) for p in pairs], with_embedding=False)


def test_scorer_ranks_gold_pairs_above_the_rest_on_unseen_documents() -> None:
    scorer = fitted(PAIRS[:3])
    for pair in PAIRS[3:]:
        logits = scorer.score(pair.simple_sentences, pair.complex_sentences)
        gold = gold_pair_matrix(pair).astype(bool)
        assert logits[gold].min() > logits[~gold].max()


def test_fine_tuning_stays_near_the_start_in_proportion_to_the_prior() -> None:
    start = fitted(PAIRS[:3]).parameters
    assert start is not None
    few = PAIRS[3:4]
    features = [pair_features(p.simple_sentences, p.complex_sentences) for p in few]
    labels = [gold_pair_matrix(p) for p in few]
    near = LearnedPairScorer().fit(features, labels, with_embedding=False, start=start, prior_l2=1000.0).parameters
    far = LearnedPairScorer().fit(features, labels, with_embedding=False, start=start, prior_l2=0.01).parameters
    assert near is not None and far is not None
    assert np.array_equal(near.mean, start.mean) and np.array_equal(near.scale, start.scale)
    assert np.linalg.norm(near.weights - start.weights) < 0.1 * np.linalg.norm(far.weights - start.weights)


def test_parameters_round_trip_and_bad_parameters_are_named() -> None:
    parameters = fitted(PAIRS[:2]).parameters
    assert parameters is not None
    again = ScorerParameters.from_dict(parameters.to_dict())
    assert again.features == parameters.features and np.allclose(again.weights, parameters.weights)
    good = parameters.to_dict()
    for broken, message in (
        ({**good, "weights": good["weights"][:-1]}, "'weights' must hold"),
        ({**good, "scale": [0.0] * len(good["scale"])}, "'scale' must be positive"),
        ({**good, "features": ["char3_cosine", "shoe_size"]}, "unknown scorer feature"),
        ({**good, "bias": "high"}, "'bias' must be a finite number"),
        ({key: value for key, value in good.items() if key != "mean"}, "lack mean"),
    ):
        with pytest.raises(ValueError, match=message):
            ScorerParameters.from_dict(broken)
    with pytest.raises(ValueError, match="only read by measure 'learned'"):
        AlignerConfig(measure="char3_tfidf_cosine", scorer=good)


def test_a_scorer_with_vectors_needs_them() -> None:
    names = feature_names(True)
    parameters = ScorerParameters(names, np.zeros(len(names)), np.ones(len(names)), np.ones(len(names)), 0.0)
    with pytest.raises(ValueError, match="pass embedding_cosine or give it an encoder"):
        LearnedPairScorer(parameters).score(["Anna lacht."], ["Anna lacht laut."])
    logits = LearnedPairScorer(parameters).score(["Anna lacht."], ["Anna lacht laut."], np.ones((1, 1), dtype=np.float32))
    assert logits.shape == (1, 1)


def test_learned_aligner_trains_saves_loads_and_aligns_splits(tmp_path: Path) -> None:
    aligner = Aligner(learned_config(device="cpu", scorer_embedding=False), seed=0)
    with pytest.raises(ValueError, match="not trained yet"):
        aligner.measure  # noqa: B018 - reading the property is the test: it raises
    train_aligner(PAIRS[:4], aligner=aligner, training=TrainingConfig(epochs=3), seed=0, dev_pairs=PAIRS[4:])
    assert aligner.config.scorer is not None and not aligner.uses_encoder
    report = evaluate_aligner(aligner, PAIRS[4:])
    assert report.group_task1.f1 >= 0.8  # splits into two simple sentences come out whole
    aligner.save(tmp_path / "model")
    loaded = Aligner.load(tmp_path / "model", device="cpu")
    pair = PAIRS[4]
    assert (
        loaded.align(pair.complex_sentences, pair.simple_sentences).groups
        == aligner.align(pair.complex_sentences, pair.simple_sentences).groups
    )
    tuned = Aligner.load(tmp_path / "model", device="cpu")
    train_aligner(PAIRS[4:], aligner=tuned, training=TrainingConfig(epochs=1, scorer_prior_l2=1e6), seed=0)
    before, after = aligner.config.scorer["weights"], tuned.config.scorer["weights"]
    assert np.allclose(before, after, atol=1e-3)  # fine-tuned from the saved scorer, held at it by the prior
