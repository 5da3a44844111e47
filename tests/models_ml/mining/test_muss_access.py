"""MUSS's ACCESS control attributes (models_ml.mining.muss): word rank, character ratio, Levenshtein, dependency depth."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest
import wordfreq

from models_ml.mining import muss
from models_ml.mining.muss import access_attributes, dependency_tree_depth, word_rank_score


def expected_word_rank(words: list[str], language: str) -> float:
    ranks = {word: rank for rank, word in enumerate(wordfreq.top_n_list(language, muss.WORD_RANK_VOCABULARY))}
    return float(np.quantile([np.log1p(ranks[word]) for word in words], 0.75))


def test_word_rank_score_is_the_third_quartile_of_content_word_log_ranks_in_english() -> None:
    score = word_rank_score("The physician administered the medication, twice.", "en")
    assert score == pytest.approx(expected_word_rank(["physician", "administered", "medication", "twice"], "en"))
    assert word_rank_score("the and of", "en") == pytest.approx(np.log1p(muss.WORD_RANK_VOCABULARY))  # only stop words
    assert word_rank_score("Some text.", "xx") is None


def test_word_rank_ratio_is_below_one_for_simpler_words_in_english_and_german() -> None:
    english = access_attributes("The physician administered the medication.", "The doctor gave the medicine.", "en")
    german = access_attributes("Der Mediziner verabreichte das Medikament.", "Der Arzt gab die Medizin.", "de")
    assert english["word_rank_ratio"] is not None and english["word_rank_ratio"] < 1.0
    assert german["word_rank_ratio"] is not None and german["word_rank_ratio"] < 1.0
    source_score = expected_word_rank(["mediziner", "verabreichte", "medikament"], "de")
    assert german["word_rank_ratio"] == pytest.approx(word_rank_score("Der Arzt gab die Medizin.", "de") / source_score)


def test_access_attributes_char_ratio_and_levenshtein_on_a_hand_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(muss, "load_dependency_parser", lambda language: None)
    attributes = access_attributes("kitten", "sitting", "en")
    assert set(attributes) == {"char_ratio", "levenshtein_replace_only", "word_rank_ratio", "dependency_depth_ratio"}
    assert attributes["char_ratio"] == pytest.approx(7 / 6)
    assert attributes["levenshtein_replace_only"] == pytest.approx(2 / 3)
    assert attributes["dependency_depth_ratio"] is None


@dataclass
class FakeToken:
    children: list[FakeToken] = field(default_factory=list)


@dataclass
class FakeSentence:
    root: FakeToken


@dataclass
class FakeDoc:
    sents: list[FakeSentence]


def chain(length: int) -> FakeToken:
    """A tree of ``length`` tokens in a line: depth length - 1."""
    node = FakeToken()
    for _ in range(length - 1):
        node = FakeToken([node])
    return node


def fake_parser(text: str) -> FakeDoc:
    """One chain per sentence ('.'-separated), as long as the sentence has words."""
    return FakeDoc([FakeSentence(chain(len(part.split()))) for part in text.split(".") if part.strip()])


def test_dependency_tree_depth_takes_the_deepest_sentence_tree() -> None:
    branching = FakeToken([FakeToken(), FakeToken([FakeToken([FakeToken()])])])  # depth 3 via the second child
    assert dependency_tree_depth(FakeDoc([FakeSentence(chain(2)), FakeSentence(branching)])) == 3
    assert dependency_tree_depth(FakeDoc([FakeSentence(FakeToken())])) == 0
    assert dependency_tree_depth(FakeDoc([])) == 0


def test_dependency_depth_ratio_is_computed_with_a_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(muss, "load_dependency_parser", lambda language: fake_parser)
    attributes = access_attributes("one two three four five. six", "one two three. four five", "en")
    assert attributes["dependency_depth_ratio"] == pytest.approx(2 / 4)
    assert access_attributes("single", "one two three", "en")["dependency_depth_ratio"] is None  # source depth 0


def test_dependency_parser_is_absent_without_spacy(monkeypatch: pytest.MonkeyPatch) -> None:
    muss.load_dependency_parser.cache_clear()
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy raises ImportError
    try:
        assert muss.load_dependency_parser("en") is None
        assert access_attributes("A short sentence here.", "A short one.", "en")["dependency_depth_ratio"] is None
    finally:
        muss.load_dependency_parser.cache_clear()


def test_dependency_parser_loader_picks_an_installed_model_with_a_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []

    def load(name: str) -> object:
        tried.append(name)
        if name == "de_core_news_sm":
            return types.SimpleNamespace(pipe_names=["tok2vec", "tagger", "parser"])
        if name == "de_core_web_sm":
            return types.SimpleNamespace(pipe_names=["tok2vec", "ner"])  # no parser: skipped
        raise OSError(f"[E050] Can't find model '{name}'")

    muss.load_dependency_parser.cache_clear()
    monkeypatch.setitem(sys.modules, "spacy", types.SimpleNamespace(load=load))
    try:
        parser = muss.load_dependency_parser("de")
        assert parser is not None and "parser" in parser.pipe_names
        assert tried[0] == "de_core_web_sm" and tried[-1] == "de_core_news_sm"
        assert muss.load_dependency_parser("fr") is None
    finally:
        muss.load_dependency_parser.cache_clear()
