"""Sentence-similarity measures: shared (m, n) interface, lexical baselines, bi-encoder cosine, registry, combiner."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from models_ml.similarity.encoders import load_sentence_encoder
from models_ml.similarity.measures import (
    CombinerConfig,
    EmbeddingCosine,
    JaccardSimilarity,
    LearnedCombiner,
    SimilarityMeasure,
    TfidfCosine,
    build_measure,
    char_trigrams,
    measure_features,
    word_tokens,
)

LEXICAL_NAMES = ("jaccard", "tfidf_cosine", "char3_tfidf_cosine")
SIMPLE = ["The cat sat on the mat.", "Stocks fell sharply today.", "", "?!"]
COMPLEX = ["The cat sat on the mat.", "Rain is expected in Paris.", "Stocks fell sharply today."]


class RecordingEncoder:
    """A tiny deterministic encoder: one-hot of the sentence length, remembering what it was asked to encode."""

    name = "recording"
    dimensions = 64

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, sentences: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.seen.extend(sentences)
        vectors = np.zeros((len(sentences), self.dimensions), dtype=np.float32)
        vectors[np.arange(len(sentences)), [len(s) % self.dimensions for s in sentences]] = 1.0
        return vectors


# --- tokenisation -----------------------------------------------------------------------------


def test_word_tokens_are_lower_cased_unicode_words_without_punctuation():
    assert word_tokens("Über-Straße, 3 Äpfel!") == ["über", "straße", "3", "äpfel"]


def test_char_trigrams_pad_with_spaces_and_collapse_whitespace():
    assert char_trigrams(" Ab  c ") == [" ab", "ab ", "b c", " c "]
    assert char_trigrams("   ") == []


# --- lexical baselines ------------------------------------------------------------------------


@pytest.mark.parametrize("name", LEXICAL_NAMES)
def test_lexical_measures_give_float32_matrix_with_identical_pairs_at_one(name):
    scores = build_measure(name).score(SIMPLE, COMPLEX)
    assert scores.shape == (4, 3) and scores.dtype == np.float32
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert scores[1, 2] == pytest.approx(1.0, abs=1e-6)
    assert scores[0, 0] == scores[0].max() and scores[1, 2] == scores[1].max()
    assert np.all((scores >= 0) & (scores <= 1))


@pytest.mark.parametrize("name", LEXICAL_NAMES)
def test_sentences_without_tokens_get_a_row_of_zeros(name):
    scores = build_measure(name).score(SIMPLE, COMPLEX)
    assert scores[2].tolist() == [0.0, 0.0, 0.0]  # empty string
    if name != "char3_tfidf_cosine":  # "?!" has character 3-grams but no words
        assert scores[3].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", LEXICAL_NAMES)
def test_empty_documents_give_empty_matrices_of_the_right_shape(name):
    measure = build_measure(name)
    assert measure.score([], COMPLEX).shape == (0, 3)
    assert measure.score(SIMPLE, []).shape == (4, 0)
    assert measure.score([], []).shape == (0, 0)


def test_unrelated_sentences_share_no_words_and_score_zero():
    for name in ("jaccard", "tfidf_cosine"):
        assert build_measure(name).score(["Stocks fell sharply."], ["Rain is expected in Paris."])[0, 0] == 0.0


def test_jaccard_is_intersection_over_union_of_word_sets():
    # {the, cat, sat} vs {the, cat, ran, away}: 2 shared of 5 distinct words; repeats do not count.
    assert JaccardSimilarity().score(["The cat sat, the cat!"], ["the cat ran away"])[0, 0] == pytest.approx(2 / 5)


def test_tfidf_weights_a_shared_rare_word_above_a_shared_common_word():
    corpus = ["the river", "the town", "the market", "the road", "a volcano erupted"]
    scores = TfidfCosine(idf_corpus=corpus).score(["the volcano"], ["the storm", "volcano ash"])
    assert scores[0, 1] > scores[0, 0] > 0


def test_tfidf_without_corpus_fits_idf_on_both_documents():
    # A word in every sentence of both documents gets the lowest IDF, so the shared rare word dominates.
    scores = TfidfCosine().score(["the volcano", "the cat"], ["the volcano", "the dog"])
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert 0 < scores[1, 1] < 0.5


@pytest.mark.parametrize("analyzer", ["word", "char3"])
def test_tfidf_cosine_is_the_textbook_formula_with_counts_and_smoothed_idf(analyzer):
    # Repeated terms count, a term's document frequency is the number of sentences that hold it, an empty sentence
    # scores 0 and still counts as a document.
    simple = ["the cat saw the other cat", "", "a dog"]
    complex_side = ["the cat", "dogs and cats and dogs", "the the the"]
    analyze = {"word": word_tokens, "char3": char_trigrams}[analyzer]
    documents = [Counter(analyze(sentence)) for sentence in simple + complex_side]
    vocabulary = sorted({term for counts in documents for term in counts})
    df = {term: sum(term in counts for counts in documents) for term in vocabulary}
    idf = {term: math.log((1 + len(documents)) / (1 + df[term])) + 1 for term in vocabulary}
    rows = np.array([[counts[term] * idf[term] for term in vocabulary] for counts in documents])  # (6, V)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    expected = unit[: len(simple)] @ unit[len(simple) :].T  # (3, 3)
    scores = TfidfCosine(analyzer).score(simple, complex_side)
    assert scores.dtype == np.float32 and scores.shape == (3, 3)
    np.testing.assert_allclose(scores, np.clip(expected, 0, 1), atol=1e-6)
    assert not scores[1].any() and scores[0, 0] > 0


def test_a_bare_string_or_non_string_sentence_is_rejected():
    with pytest.raises(ValueError, match="single string"):
        JaccardSimilarity().score("The cat sat.", ["x"])
    with pytest.raises(ValueError, match="complex sentence 1 is int"):
        JaccardSimilarity().score(["x"], ["y", 3])  # type: ignore[list-item]


# --- bi-encoder cosine ------------------------------------------------------------------------


def test_chunked_cosine_of_2000_by_2000_unit_vectors_equals_the_dot_product():
    rng = np.random.default_rng(0)
    simple = rng.normal(size=(2000, 32)).astype(np.float32)
    complex = rng.normal(size=(2000, 32)).astype(np.float32)
    simple /= np.linalg.norm(simple, axis=1, keepdims=True)
    complex /= np.linalg.norm(complex, axis=1, keepdims=True)
    scores = EmbeddingCosine(RecordingEncoder(), chunk_rows=300).score_embeddings(simple, complex)
    assert scores.shape == (2000, 2000) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, simple @ complex.T, rtol=1e-5, atol=1e-6)


def test_cosine_rejects_embeddings_of_different_widths():
    with pytest.raises(ValueError, match="widths differ"):
        EmbeddingCosine(RecordingEncoder()).score_embeddings(np.ones((2, 4)), np.ones((3, 5)))


def test_cosine_never_encodes_blank_sentences_and_scores_them_zero():
    encoder = RecordingEncoder()
    scores = EmbeddingCosine(encoder).score(["abc", "  "], ["xyz", ""])
    assert encoder.seen == ["abc", "xyz"]
    assert scores.tolist() == [[1.0, 0.0], [0.0, 0.0]]


@pytest.fixture(scope="module", params=["torch", "auto"])
def minilm(request):
    return load_sentence_encoder(device="cpu", backend=request.param)


def test_minilm_cosine_scores_identical_sentences_one_and_unrelated_low(minilm):
    scores = build_measure("embedding_cosine", encoder=minilm).score(SIMPLE[:3], COMPLEX)
    assert scores.shape == (3, 3) and scores.dtype == np.float32
    # int8 (the CPU default) quantizes activations per batch, so one sentence encoded in two batches
    # differs a little; torch gives the same vector.
    tolerance = 1e-4 if type(minilm).__name__ == "SentenceTransformerEncoder" else 0.01
    assert scores[0, 0] == pytest.approx(1.0, abs=tolerance) and scores[1, 2] == pytest.approx(1.0, abs=tolerance)
    assert scores[0, 1] < 0.3 and scores[1, 1] < 0.3
    assert scores[2].tolist() == [0.0, 0.0, 0.0]
    assert build_measure("embedding_cosine", encoder=minilm).score([], COMPLEX).shape == (0, 3)


# --- registry ---------------------------------------------------------------------------------


def test_unknown_measure_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown similarity measure 'bleu'.*jaccard.*word_max"):
        build_measure("bleu")


def test_an_option_the_measure_does_not_take_is_a_value_error():
    with pytest.raises(ValueError, match="bad options for similarity measure 'jaccard'"):
        build_measure("jaccard", theta=0.5)


def test_built_measures_follow_the_protocol_and_carry_their_registry_name():
    for name in LEXICAL_NAMES:
        measure = build_measure(name)
        assert isinstance(measure, SimilarityMeasure)
        assert measure.name == name


# --- learned combination ----------------------------------------------------------------------


def test_combiner_learns_which_feature_predicts_alignment():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, size=400)
    informative = labels + rng.normal(scale=0.3, size=400)  # separates the classes
    noise = rng.normal(size=400)
    features = np.stack([informative, noise], axis=1)
    combiner = LearnedCombiner(CombinerConfig(l2=0.1)).fit(features[:300], labels[:300])
    probabilities = combiner.predict_proba(features[300:])
    assert probabilities.shape == (100,) and probabilities.dtype == np.float32
    assert np.mean((probabilities > 0.5) == labels[300:]) > 0.9
    assert combiner.parameters is not None
    assert combiner.parameters.weights[0] > 5 * abs(combiner.parameters.weights[1])


def test_combiner_scores_a_stack_of_measure_matrices():
    measures = [build_measure("jaccard"), build_measure("tfidf_cosine")]
    features = measure_features(measures, SIMPLE, COMPLEX)
    assert features.shape == (4, 3, 2)
    flat = features.reshape(-1, 2)
    labels = (flat[:, 0] > 0.5).astype(int)
    probabilities = LearnedCombiner().fit(flat, labels).predict_proba(features)
    assert probabilities.shape == (4, 3)
    assert probabilities[0, 0] > 0.5 > probabilities[0, 1]


def test_combiner_rejects_one_class_labels_and_prediction_before_fit():
    with pytest.raises(ValueError, match="only one class"):
        LearnedCombiner().fit(np.ones((4, 2)), np.ones(4))
    with pytest.raises(ValueError, match="before fit"):
        LearnedCombiner().predict_proba(np.ones((4, 2)))
    with pytest.raises(ValueError, match="0 .* or 1"):
        LearnedCombiner().fit(np.ones((2, 2)), np.array([0, 2]))
