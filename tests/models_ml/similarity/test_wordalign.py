"""Word-embedding alignment similarities (Kajiwara & Komachi 2016): pure scores, vectorised measures, MiniLM tokens."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from models_ml.similarity.encoders import load_sentence_encoder
from models_ml.similarity.measures import build_measure
from models_ml.similarity.wordalign import (
    AverageAlignment,
    HungarianAlignment,
    MaxAlignment,
    TokenVectorizer,
    WordMoversSimilarity,
    average_alignment,
    hungarian_alignment,
    max_alignment,
    max_alignment_asymmetric,
    relaxed_word_movers_similarity,
    threshold_token_similarity,
    word_movers_similarity,
)


def unit_rows(rng: np.random.Generator, rows: int, width: int = 8) -> np.ndarray:
    vectors = rng.normal(size=(rows, width)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# --- pure functions on hand-made token-similarity matrices --------------------------------------


def test_threshold_zeroes_pairs_below_theta_and_keeps_the_rest():
    phi = np.array([[0.9, 0.3], [-0.5, 0.49]], dtype=np.float32)
    np.testing.assert_allclose(threshold_token_similarity(phi, 0.49), [[0.9, 0.0], [0.0, 0.49]], rtol=1e-6)


def test_theta_one_keeps_only_identical_tokens():
    phi = np.array([[1.0, 0.999], [0.98, 1.0000001]], dtype=np.float32)
    assert threshold_token_similarity(phi, 1.0).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_average_alignment_is_the_mean_over_all_pairs_including_zeroed_ones():
    phi = np.array([[1.0, 0.0], [0.5, 0.5]], dtype=np.float32)
    assert average_alignment(phi) == pytest.approx(0.5)


def test_hungarian_on_two_by_two_example_prefers_the_best_total_not_the_best_single_pair():
    # Greedy would take 0.9 then 0.1 (total 1.0); the optimum is 0.8 + 0.7 = 1.5, over min(2, 2) words.
    phi = np.array([[0.9, 0.8], [0.7, 0.1]], dtype=np.float32)
    assert hungarian_alignment(phi) == pytest.approx(0.75)


def test_hungarian_divides_by_the_shorter_sentence_length():
    phi = np.array([[1.0, 0.2, 0.0]], dtype=np.float32)  # one word against three
    assert hungarian_alignment(phi) == pytest.approx(1.0)


def test_hungarian_matches_brute_force_over_all_matchings():
    rng = np.random.default_rng(7)
    phi = rng.uniform(0, 1, size=(3, 5)).astype(np.float32)
    best = max(sum(phi[i, cols[i]] for i in range(3)) for cols in itertools.permutations(range(5), 3))
    assert hungarian_alignment(phi) == pytest.approx(best / 3, rel=1e-6)


def test_max_alignment_directions_on_hand_example():
    phi = np.array([[1.0, 0.0, 0.6], [0.0, 0.8, 0.0]], dtype=np.float32)  # |x| = 2, |y| = 3
    assert max_alignment_asymmetric(phi) == pytest.approx((1.0 + 0.8) / 2)
    assert max_alignment_asymmetric(phi.T) == pytest.approx((1.0 + 0.8 + 0.6) / 3)
    assert max_alignment(phi) == pytest.approx(((1.0 + 0.8) / 2 + (1.0 + 0.8 + 0.6) / 3) / 2)


def test_wmd_of_identical_bags_is_similarity_one():
    words = unit_rows(np.random.default_rng(0), 4)
    assert word_movers_similarity(words, words[::-1].copy()) == pytest.approx(1.0, abs=1e-6)


def test_wmd_splits_mass_by_uniform_weights():
    e1, e2 = np.eye(2, dtype=np.float32)
    # Half of x's single word stays on e1 (cost 0), half travels sqrt(2) to e2: WMD = sqrt(2) / 2.
    assert word_movers_similarity(e1[None], np.stack([e1, e2])) == pytest.approx(1 - math.sqrt(2) / 4, rel=1e-6)


def test_pure_scores_of_an_empty_sentence_are_zero():
    empty = np.zeros((0, 3), dtype=np.float32)
    assert average_alignment(empty) == max_alignment(empty) == hungarian_alignment(empty) == 0.0
    assert word_movers_similarity(np.zeros((0, 8), np.float32), unit_rows(np.random.default_rng(0), 2)) == 0.0


# --- measures over precomputed word vectors ----------------------------------------------------


def test_strict_subset_makes_max_alignment_asymmetric_and_symmetric_is_their_mean():
    e = np.eye(3, dtype=np.float32)
    simple_words, complex_words = [e[:2]], [e]  # the simple sentence's words are a strict subset
    forward = MaxAlignment(None, direction="simple_to_complex").score_token_vectors(simple_words, complex_words)
    backward = MaxAlignment(None, direction="complex_to_simple").score_token_vectors(simple_words, complex_words)
    symmetric = MaxAlignment(None).score_token_vectors(simple_words, complex_words)
    assert forward[0, 0] == pytest.approx(1.0)
    assert backward[0, 0] == pytest.approx(2 / 3)
    assert symmetric[0, 0] == pytest.approx((forward[0, 0] + backward[0, 0]) / 2)


def test_vectorised_measures_equal_the_pure_functions_pair_by_pair():
    rng = np.random.default_rng(3)
    simple = [unit_rows(rng, k) for k in (3, 1, 4)]
    complex = [unit_rows(rng, k) for k in (2, 5, 1, 3)]
    theta = 0.1
    measures = {
        AverageAlignment(None, theta=theta): average_alignment,
        MaxAlignment(None, theta=theta): max_alignment,
        MaxAlignment(None, theta=theta, direction="simple_to_complex"): max_alignment_asymmetric,
        MaxAlignment(None, theta=theta, direction="complex_to_simple"): lambda phi: max_alignment_asymmetric(phi.T),
        HungarianAlignment(None, theta=theta): hungarian_alignment,
    }
    for measure, pure in measures.items():
        expected = [[pure(threshold_token_similarity(x @ y.T, theta)) for y in complex] for x in simple]
        np.testing.assert_allclose(measure.score_token_vectors(simple, complex), expected, rtol=1e-5, err_msg=measure.name)
    wmd_expected = [[word_movers_similarity(x, y) for y in complex] for x in simple]
    np.testing.assert_allclose(WordMoversSimilarity(None).score_token_vectors(simple, complex), wmd_expected, rtol=1e-5)


def test_sentences_without_words_get_zero_rows_and_columns():
    rng = np.random.default_rng(1)
    empty = np.zeros((0, 8), dtype=np.float32)
    scores = MaxAlignment(None).score_token_vectors([unit_rows(rng, 2), empty], [empty, unit_rows(rng, 3)])
    assert scores.shape == (2, 2)
    assert scores[1].tolist() == [0.0, 0.0] and scores[0, 0] == 0.0


def test_bad_theta_direction_and_vector_shapes_raise_value_error():
    with pytest.raises(ValueError, match="theta"):
        MaxAlignment(None, theta=1.5)
    with pytest.raises(ValueError, match="direction"):
        MaxAlignment(None, direction="sideways")
    with pytest.raises(ValueError, match="shape"):
        MaxAlignment(None).score_token_vectors([np.zeros(8, dtype=np.float32)], [])
    with pytest.raises(ValueError, match="TokenVectorizer"):
        MaxAlignment(None).score(["a"], ["b"])


# --- MiniLM token vectors ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder():
    return load_sentence_encoder(device="cpu")


SIMPLE = ["The cat sat.", "Stocks fell sharply today.", ""]
COMPLEX = ["The cat sat on the mat.", "Stocks fell sharply today.", "Rain is expected in Paris."]


@pytest.mark.parametrize("source", ["static", "contextual"])
def test_identical_sentences_score_about_one_and_highest_in_their_row(encoder, source):
    for name in ("word_max", "word_hungarian", "word_movers"):
        scores = build_measure(name, encoder=encoder, token_source=source).score(SIMPLE, COMPLEX)
        assert scores.shape == (3, 3) and scores.dtype == np.float32, name
        assert scores[1, 1] == pytest.approx(1.0, abs=1e-4), name
        assert scores[1, 1] > max(scores[1, 0], scores[1, 2]), name
        assert scores[2].tolist() == [0.0, 0.0, 0.0], name  # the empty sentence


def test_static_subset_sentence_is_fully_covered_one_way_only(encoder):
    scores = {
        direction: build_measure(f"word_max{direction}", encoder=encoder).score(["The cat sat."], ["The cat sat on the mat."])
        for direction in ("_simple_to_complex", "_complex_to_simple", "")
    }
    assert scores["_simple_to_complex"][0, 0] == pytest.approx(1.0, abs=1e-5)
    assert scores["_complex_to_simple"][0, 0] < 0.9
    assert scores[""][0, 0] == pytest.approx((scores["_simple_to_complex"][0, 0] + scores["_complex_to_simple"][0, 0]) / 2)


def test_theta_one_with_static_tokens_counts_only_shared_words(encoder):
    measure = build_measure("word_max_simple_to_complex", encoder=encoder, theta=1.0)
    scores = measure.score(["Stocks fell.", "Cats sleep a lot."], ["Stocks rose.", "Dogs bark loudly."])
    assert scores[0, 0] == pytest.approx(0.5, abs=1e-5)  # "stocks" matches, "fell" does not
    assert scores[0, 1] == 0.0 and scores[1, 0] == 0.0 and scores[1, 1] == 0.0


def test_unrelated_sentences_score_low(encoder):
    scores = build_measure("word_max", encoder=encoder).score(["Stocks fell sharply today."], ["Rain is expected in Paris."])
    assert scores[0, 0] < 0.3


def test_word_pieces_of_one_word_become_one_unit_vector_and_punctuation_is_dropped(encoder):
    assert len(encoder.model.tokenizer.tokenize("Kajiwara")) > 1  # the word really is split into pieces
    for source in ("static", "contextual"):
        words = TokenVectorizer(encoder.model, source=source).vectorize(["Kajiwara!", "?!", "big cats"])
        assert [w.shape[0] for w in words] == [1, 0, 2], source
        np.testing.assert_allclose(np.linalg.norm(words[2], axis=1), 1.0, rtol=1e-5)


def test_unknown_token_source_raises_value_error(encoder):
    with pytest.raises(ValueError, match="token source"):
        build_measure("word_max", encoder=encoder, token_source="subword")


def test_relaxed_wmd_is_upper_bound_of_wmd_similarity_and_one_for_identical_bags():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    y = rng.normal(size=(3, 6)).astype(np.float32)
    x, y = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
    assert relaxed_word_movers_similarity(x, y) >= word_movers_similarity(x, y) - 1e-6
    assert relaxed_word_movers_similarity(x, x) == pytest.approx(1.0)
    assert relaxed_word_movers_similarity(np.eye(2)[:1], np.eye(2)[1:]) == pytest.approx(1 - 2**0.5 / 2)
