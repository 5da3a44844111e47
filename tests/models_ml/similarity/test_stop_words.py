"""Content words and LHA's unigram overlap filter (models_ml.similarity.stop_words)."""

from __future__ import annotations

import pytest

from models_ml.similarity.stop_words import unigram_overlap


def test_overlap_ignores_stop_words_punctuation_and_numbers():
    # target content words: {cat, sat, mat}; "the", "on", "of", "them", "3", "2024", "," and "!" do not count
    overlap = unigram_overlap("A cat sat quietly.", "The cat sat on the mat, 3 of them in 2024!", "en")
    assert overlap == pytest.approx(2 / 3)


def test_overlap_is_zero_when_target_has_no_content_word():
    assert unigram_overlap("anything here", "It is 42 and the.", "en") == 0.0


def test_overlap_uses_german_stop_words_for_german():
    assert unigram_overlap("Der Hund bellt laut.", "Der Hund und die Katze.", "de") == pytest.approx(1 / 2)
