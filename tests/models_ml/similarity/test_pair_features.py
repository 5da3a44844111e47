"""Pair features: asymmetric covers for splits, length and position, relative views, shapes and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from models_ml.similarity.measures import TfidfCosine, char_trigrams
from models_ml.similarity.pair_features import feature_names, pair_features

COMPLEX = ["Anna kauft im Laden Brot und Milch, weil sie Hunger hat.", "Der Zug nach Berlin fährt um acht Uhr."]
SIMPLE = ["Anna kauft Brot.", "Anna kauft Milch.", "Sie hat Hunger.", "Der Zug fährt um acht Uhr nach Berlin."]


def column(features: np.ndarray, name: str, with_embedding: bool = False) -> np.ndarray:
    return features[..., feature_names(with_embedding).index(name)]


def test_shape_and_order_follow_feature_names() -> None:
    features = pair_features(SIMPLE, COMPLEX)
    assert features.shape == (4, 2, len(feature_names(False))) and features.dtype == np.float32
    with_cosine = pair_features(SIMPLE, COMPLEX, np.full((4, 2), 0.25, dtype=np.float32))
    assert with_cosine.shape[-1] == len(feature_names(True)) > features.shape[-1]
    assert np.all(column(with_cosine, "embedding_cosine", True) == 0.25)


def test_a_split_part_is_covered_by_its_complex_sentence_but_not_the_reverse() -> None:
    features = pair_features(SIMPLE, COMPLEX)
    for name in ("char3_cover_simple", "word_cover_simple"):
        covered = column(features, name)
        assert covered[0, 0] > 0.8 and covered[1, 0] > 0.8  # "Anna kauft Brot." lies inside the first complex sentence
        assert covered[0, 0] > covered[0, 1] + 0.5
    reverse = column(features, "word_cover_complex")
    assert reverse[0, 0] < 0.5  # one part covers little of the long sentence
    assert column(features, "char3_cosine")[3, 1] > column(features, "char3_cosine")[3, 0]


def test_char3_covers_are_shares_of_distinct_3_grams_and_the_cosine_is_the_measures() -> None:
    simple = [*SIMPLE, "Brot Brot Brot.", ""]  # repeated 3-grams count once in a cover; a blank sentence covers nothing
    features = pair_features(simple, COMPLEX)
    for j, sentence in enumerate(simple):
        for i, other in enumerate(COMPLEX):
            mine, theirs = set(char_trigrams(sentence)), set(char_trigrams(other))
            shared = len(mine & theirs)
            assert column(features, "char3_cover_simple")[j, i] == np.float32(shared / len(mine) if mine else 0.0)
            assert column(features, "char3_cover_complex")[j, i] == np.float32(shared / len(theirs))
    assert np.array_equal(column(features, "char3_cosine"), TfidfCosine("char3").score(simple, COMPLEX))


def test_length_position_and_relative_views() -> None:
    features = pair_features(SIMPLE, COMPLEX)
    assert column(features, "length_ratio")[0, 0] < 0 < column(features, "length_ratio")[3, 1] + 0.5
    position = column(features, "position")
    assert position[0, 0] < position[0, 1] and position[3, 1] < position[3, 0]
    margin = column(features, "char3_cosine_row_margin")
    assert np.allclose(margin.max(axis=1), 0.0) and np.all(margin <= 0)
    assert np.allclose(column(features, "char3_cosine_col_margin").max(axis=0), 0.0)
    cover = column(features, "char3_cover_simple")
    neighbour = column(features, "char3_cover_simple_neighbour")
    assert neighbour[1, 0] == pytest.approx(max(cover[0, 0], cover[2, 0]))
    assert neighbour[0, 0] == pytest.approx(cover[1, 0])  # the first sentence has no neighbour above


def test_empty_documents_and_punctuation_only_sentences() -> None:
    assert pair_features([], COMPLEX).shape == (0, 2, len(feature_names(False)))
    features = pair_features(["...", "Anna kauft Brot."], COMPLEX)
    assert np.all(np.isfinite(features))
    assert column(features, "word_cover_simple")[0].max() == 0.0


@pytest.mark.parametrize(
    ("simple", "cosine", "message"),
    [("Anna.", None, "single string"), (["Anna."], np.zeros((2, 2), dtype=np.float32), "expected \\(1, 2\\)")],
)
def test_bad_input_is_refused_with_a_message(simple: object, cosine: np.ndarray | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pair_features(simple, COMPLEX, cosine)  # type: ignore[arg-type]
