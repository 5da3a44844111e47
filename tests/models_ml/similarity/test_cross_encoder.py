"""Cross-encoder pair classifier: probabilities, the (m, n) measure, fine-tuning, save/load."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from models_ml.similarity.cross_encoder import (
    LABELS,
    CrossEncoderConfig,
    CrossEncoderMeasure,
    PairClassifier,
    load_pair_classifier,
    save_pair_classifier,
)
from models_ml.similarity.cross_encoder_training import PairTrainingConfig, train_pair_classifier
from models_ml.similarity.measures import SimilarityMeasure, build_measure

SENTENCES = [
    "The cat sat on the mat.",
    "The bank raised interest rates today.",
    "Children play football in the park.",
    "The museum opens a new exhibition.",
    "Heavy rain flooded the village streets.",
    "A new bridge crosses the river.",
    "The doctor visited her patients.",
    "Farmers harvest wheat in August.",
]
# Four identical pairs (aligned) and four unrelated pairs (not aligned).
TINY_EXAMPLES = [(s, s, "aligned") for s in SENTENCES[:4]] + [(SENTENCES[k], SENTENCES[k + 4], "not_aligned") for k in range(4)]
TINY_TRAINING = PairTrainingConfig(epochs=8, batch_size=4, learning_rate=1e-4, head_learning_rate=1e-2)
HELD_OUT = "The train was late again this morning."


@pytest.fixture(scope="module")
def fresh() -> PairClassifier:
    """An untrained classifier on CPU (MiniLM is loaded once for the module); tests must not train it."""
    return PairClassifier(seed=0).eval()


@pytest.fixture(scope="module")
def trained(fresh: PairClassifier) -> tuple[PairClassifier, list[float]]:
    """A copy of ``fresh`` fine-tuned on the tiny identical-vs-unrelated set, with its per-epoch losses."""
    model = copy.deepcopy(fresh)
    losses = train_pair_classifier(model, TINY_EXAMPLES, TINY_TRAINING, seed=0, device="cpu")
    return model, losses


def test_probabilities_have_one_row_of_three_per_pair_summing_to_one(fresh: PairClassifier) -> None:
    probabilities = fresh.predict_proba(SENTENCES[:3], SENTENCES[3:6], device="cpu")
    assert probabilities.shape == (3, len(LABELS))
    assert probabilities.dtype == np.float32
    assert np.all(probabilities >= 0)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)


def test_length_sorted_batches_return_rows_in_input_order(fresh: PairClassifier) -> None:
    simple = ["Short.", SENTENCES[1] + " " + SENTENCES[2] + " " + SENTENCES[3], "Mid length sentence here.", SENTENCES[4]]
    complex_sentences = [SENTENCES[5], "Tiny.", SENTENCES[6] + " " + SENTENCES[7], "Another one."]
    batched = fresh.predict_proba(simple, complex_sentences, batch_size=3)
    one_by_one = np.concatenate([fresh.predict_proba([s], [c], batch_size=1) for s, c in zip(simple, complex_sentences)])
    assert not np.allclose(one_by_one[0], one_by_one[1], atol=1e-3)  # rows differ, so a shuffle would show
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)


def test_predict_proba_rejects_unpaired_inputs(fresh: PairClassifier) -> None:
    with pytest.raises(ValueError, match="2 simple and 1 complex"):
        fresh.predict_proba(SENTENCES[:2], SENTENCES[:1])


def test_measure_scores_every_pair_in_unit_interval_as_not_not_aligned_probability(fresh: PairClassifier) -> None:
    simple, complex_sentences = SENTENCES[:3], SENTENCES[3:7]
    scores = CrossEncoderMeasure(fresh, device="cpu").score(simple, complex_sentences)
    assert isinstance(CrossEncoderMeasure(fresh), SimilarityMeasure)
    assert scores.shape == (3, 4) and scores.dtype == np.float32
    assert np.all((scores >= 0) & (scores <= 1))
    probabilities = fresh.predict_proba([simple[2]], [complex_sentences[1]])  # (1, 3)
    assert scores[2, 1] == pytest.approx(probabilities[0, 1] + probabilities[0, 2], abs=1e-5)


def test_small_chunks_give_the_same_scores_as_one_chunk(fresh: PairClassifier) -> None:
    simple, complex_sentences = SENTENCES[:3], SENTENCES[3:8]
    whole = CrossEncoderMeasure(fresh, chunk_pairs=1000).score(simple, complex_sentences)
    chunked = CrossEncoderMeasure(fresh, chunk_pairs=4, batch_size=3).score(simple, complex_sentences)  # 15 pairs
    np.testing.assert_allclose(chunked, whole, atol=1e-5)


def test_measure_gives_blank_sentences_zero_and_empty_documents_an_empty_matrix(fresh: PairClassifier) -> None:
    measure = CrossEncoderMeasure(fresh)
    scores = measure.score(["   ", SENTENCES[0]], [SENTENCES[1], ""])
    assert scores[0].tolist() == [0.0, 0.0] and scores[1, 1] == 0.0
    assert scores[1, 0] > 0.0
    assert measure.score([], SENTENCES[:2]).shape == (0, 2)


@pytest.mark.slow
def test_fine_tuning_lowers_the_loss_and_prefers_aligned_for_an_unseen_identical_pair(
    trained: tuple[PairClassifier, list[float]],
) -> None:
    model, losses = trained
    assert len(losses) == TINY_TRAINING.epochs
    assert losses[-1] < 0.5 * losses[0]
    probabilities = model.predict_proba([HELD_OUT, HELD_OUT], [HELD_OUT, "Bees make honey from flowers."])
    aligned = LABELS.index("aligned")
    assert probabilities[0, aligned] > 0.5 > probabilities[1, aligned]
    assert not model.training  # training leaves the model in eval mode


@pytest.mark.slow
def test_training_is_reproducible_from_its_seed_and_leaves_the_global_rng_alone(fresh: PairClassifier) -> None:
    config = PairTrainingConfig(batch_size=4, max_steps=2)
    before = torch.get_rng_state()
    first = train_pair_classifier(copy.deepcopy(fresh), TINY_EXAMPLES, config, seed=3, device="cpu")
    second = train_pair_classifier(copy.deepcopy(fresh), TINY_EXAMPLES, config, seed=3, device="cpu")
    assert first == second and len(first) == 1
    assert torch.equal(torch.get_rng_state(), before)


def test_training_rejects_an_unknown_label_naming_the_example(fresh: PairClassifier) -> None:
    examples = [*TINY_EXAMPLES[:2], ("a", "b", "partialAligned")]
    with pytest.raises(ValueError, match=r"example 2 has label 'partialAligned'"):
        train_pair_classifier(copy.deepcopy(fresh), examples, seed=0, device="cpu")


@pytest.mark.slow
def test_save_and_load_give_identical_probabilities(trained: tuple[PairClassifier, list[float]], tmp_path: Path) -> None:
    model, _ = trained
    save_pair_classifier(model, tmp_path)
    loaded = load_pair_classifier(tmp_path, device="cpu")
    assert loaded.config == model.config
    np.testing.assert_array_equal(loaded.predict_proba(SENTENCES[:4], SENTENCES[4:]), model.predict_proba(SENTENCES[:4], SENTENCES[4:]))
    assert set(json.loads((tmp_path / "checksums.json").read_text())) == {"config.json", "pair_classifier.pt"}


@pytest.mark.slow
def test_build_measure_loads_a_saved_classifier_from_model_dir(trained: tuple[PairClassifier, list[float]], tmp_path: Path) -> None:
    model, _ = trained
    save_pair_classifier(model, tmp_path)
    measure = build_measure("cross_encoder", device="cpu", model_dir=str(tmp_path), batch_size=8)
    assert measure.name == "cross_encoder"
    expected = CrossEncoderMeasure(model).score(SENTENCES[:2], SENTENCES[:3])
    np.testing.assert_allclose(measure.score(SENTENCES[:2], SENTENCES[:3]), expected, atol=1e-6)
    assert measure.score(SENTENCES[:2], SENTENCES[:3])[0, 0] > 0.5  # identical pair, trained model


def test_altered_weights_file_is_rejected_by_name(fresh: PairClassifier, tmp_path: Path) -> None:
    save_pair_classifier(fresh, tmp_path)
    weights = tmp_path / "pair_classifier.pt"
    weights.write_bytes(weights.read_bytes() + b"\0")
    with pytest.raises(ValueError, match=r"pair_classifier\.pt: checksum mismatch"):
        load_pair_classifier(tmp_path, device="cpu")


def test_missing_checksums_file_is_rejected_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"checksums\.json: missing"):
        load_pair_classifier(tmp_path, device="cpu")


def test_config_rejects_unknown_pooling() -> None:
    with pytest.raises(ValueError, match="pooling"):
        CrossEncoderConfig(pooling="max")
