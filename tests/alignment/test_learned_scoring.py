"""The app's pair scoring with the learned scorer: stored sentence vectors are used, the encoder is not run."""

from __future__ import annotations

import numpy as np

from alignment.aligning.scoring import PairScorer, SideSentences
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import learned_config
from models_ml.similarity.measures import TfidfCosine, build_measure
from models_ml.similarity.pair_features import feature_names
from models_ml.similarity.pair_scorer import ScorerParameters


class RefusingEncoder:
    def encode(self, sentences, **options):  # a test double
        raise AssertionError("the stored vectors should have been used")


def test_a_learned_scorer_reading_vectors_takes_the_stored_ones() -> None:
    names = feature_names(True)
    weights = np.zeros(len(names))
    weights[names.index("embedding_cosine")] = 10.0  # this scorer follows the vectors only
    parameters = ScorerParameters(names, np.zeros(len(names)), np.ones(len(names)), weights, -5.0)
    aligner = Aligner(learned_config(device="cpu", paragraph_variant="none", scorer=parameters.to_dict()))
    aligner.measure.encoder = RefusingEncoder()
    scorer = PairScorer(aligner, ["learned"], build=lambda name: aligner.measure)
    vectors = np.eye(3, dtype=np.float32)
    simple = SideSentences([1, 2], ["Eins.", "Zwei."], [0, 0], vectors[[2, 0]])  # simple 0 ~ complex 2, simple 1 ~ complex 0
    complex_side = SideSentences([3, 4, 5], ["Alpha.", "Beta.", "Gamma."], [0, 0, 0], vectors)
    outcome = scorer.score(simple, complex_side)
    assert outcome.encoder_seconds == 0.0
    matrix = outcome.matrices["learned"]
    assert matrix.shape == (2, 3) and matrix[0].argmax() == 2 and matrix[1].argmax() == 0
    assert [(g.complex, g.simple) for g in outcome.result.groups] == [((2,), (0,)), ((0,), (1,))]


def test_the_run_takes_a_pairs_char3_grams_once_for_both_measures_and_scores_exactly_the_same(monkeypatch) -> None:
    names = feature_names(False)
    weights = np.linspace(-1.0, 1.0, len(names))  # every feature counts, the character 3-gram ones included
    parameters = ScorerParameters(names, np.zeros(len(names)), np.ones(len(names)), weights, -0.5)
    aligner = Aligner(learned_config(device="cpu", paragraph_variant="none", scorer=parameters.to_dict()))
    calls = []
    real = TfidfCosine.term_counts

    def counting(self, simple, complex):
        calls.append(self.name)
        return real(self, simple, complex)

    simple = SideSentences([1, 2], ["The cat sat.", "It was warm."], [0, 0], None)
    complex_side = SideSentences([3, 4, 5], ["The old cat sat on the mat.", "The sun was warm.", "Birds sang."], [0, 0, 0], None)
    alone = PairScorer(aligner, ["learned"], build=lambda name: aligner.measure).score(simple, complex_side)
    measure = TfidfCosine("char3").score(simple.texts, complex_side.texts)
    monkeypatch.setattr(TfidfCosine, "term_counts", counting)
    both = PairScorer(
        aligner, ["char3_tfidf_cosine", "learned"], build=lambda name: aligner.measure if name == "learned" else build_measure(name)
    )
    together = both.score(simple, complex_side)
    assert calls == ["char3_tfidf_cosine"], "the character 3-grams are taken once per pair, for the measure and the scorer"
    assert np.array_equal(alone.matrices["learned"], together.matrices["learned"])
    assert list(together.matrices) == ["char3_tfidf_cosine", "learned"], "the run's order"
    assert together.matrices["char3_tfidf_cosine"].dtype == measure.dtype
    assert np.array_equal(together.matrices["char3_tfidf_cosine"], measure), "the measure's own scores, bit for bit"
    assert "char3_tfidf_cosine" not in alone.matrices, "a run that did not ask for it does not keep it"
