"""LHA hierarchical alignment: document kNN, two-way sentence neighbours, n:m groups, filters, global variant."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from models_ml.mining.knn import Neighbours, top_k
from models_ml.mining.lha import LHAConfig, align_documents, align_sentences, document_vectors, mine_lha
from models_ml.mining.types import MiningDocument
from models_ml.similarity.encoders import load_sentence_encoder

NO_FILTERS = {"min_overlap": None, "max_length_ratio": None}


def unit(*components: float) -> np.ndarray:
    vector = np.asarray(components, dtype=np.float32)
    return vector / np.linalg.norm(vector)


class FakeEncoder:
    """Maps known sentences to chosen unit vectors and counts how often each sentence was encoded."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls: dict[str, int] = {}

    def __call__(self, sentences: Sequence[str]) -> np.ndarray:
        for sentence in sentences:
            self.calls[sentence] = self.calls.get(sentence, 0) + 1
        return np.stack([self.vectors[s] for s in sentences]) if sentences else np.zeros((0, 3), np.float32)


# Geometry shared by the two-way neighbour tests: with k = 1 both sources prefer t0, t0 prefers s1,
# t1 prefers s0, so the links (s0, t0), (s1, t0), (s0, t1) chain into one 2:2 group.
S0 = unit(0.9, 0.13333, 0.41500)  # cos(s0, t0) = 0.9, cos(s0, t1) = 0.8
S1 = unit(0.95, -0.31225, 0.0)  # cos(s1, t0) = 0.95, cos(s1, t1) ~ 0.57
T0 = unit(1.0, 0.0, 0.0)
T1 = unit(0.8, 0.6, 0.0)


# --- document vectors and document alignment -------------------------------------------------


def test_document_vector_is_renormalised_mean_and_empty_document_is_zero_row():
    vectors = document_vectors([np.stack([unit(1, 0), unit(0, 1)]), np.zeros((0, 2), np.float32)])
    np.testing.assert_allclose(vectors, [[2**-0.5, 2**-0.5], [0.0, 0.0]], atol=1e-6)


def test_document_vectors_reject_mixed_widths():
    with pytest.raises(ValueError, match="different widths"):
        document_vectors([np.ones((1, 2)), np.ones((1, 3))])


def test_align_documents_keeps_k_nearest_at_or_above_theta_d_best_first():
    sources = np.stack([unit(1, 0, 0), unit(0, 0, 1)])
    targets = np.stack([unit(1, 1, 0), unit(1, 0, 0), unit(0, 1, 0)])
    pairs = align_documents(sources, targets, k=2, theta_d=0.5)
    assert [(s, t) for s, t, _ in pairs] == [(0, 1), (0, 0)]  # source 1 is orthogonal to every target
    assert pairs[0][2] == pytest.approx(1.0) and pairs[1][2] == pytest.approx(2**-0.5)
    assert [(s, t) for s, t, _ in align_documents(sources, targets, k=2, theta_d=0.8)] == [(0, 1)]


def test_align_documents_uses_the_given_search():
    asked: list[int] = []

    def recording_search(queries: np.ndarray, keys: np.ndarray, k: int) -> Neighbours:
        asked.append(k)
        return top_k(queries, keys, k)

    pairs = align_documents(np.stack([unit(1, 0)]), np.stack([unit(1, 0), unit(0, 1)]), k=5, theta_d=0.0, search=recording_search)
    assert asked == [2]  # k is capped at the number of target documents
    assert [(s, t) for s, t, _ in pairs] == [(0, 0), (0, 1)]


def test_align_documents_rejects_mismatched_widths():
    with pytest.raises(ValueError, match="same width"):
        align_documents(np.ones((1, 2)), np.ones((1, 3)), k=1, theta_d=0.5)


# --- sentence alignment ----------------------------------------------------------------------


def test_target_side_neighbours_add_links_and_components_chain_into_one_group_even_at_k1():
    groups = align_sentences(np.stack([S0, S1]), np.stack([T0, T1]), k=1, theta_s=0.5)
    assert [(s, t) for s, t, _ in groups] == [((0, 1), (0, 1))]
    # links (s0, t0) 0.9, (s1, t0) 0.95 and (s0, t1) 0.8 (found from t1's side only)
    assert groups[0][2] == pytest.approx((0.9 + 0.95 + 0.8) / 3, abs=1e-4)


def test_mutual_best_matches_at_k1_give_single_pairs():
    sources = np.stack([unit(1, 0.1, 0), unit(0, 1, 0.1)])
    targets = np.stack([unit(0, 1, 0), unit(1, 0, 0)])
    groups = align_sentences(sources, targets, k=1, theta_s=0.5)
    assert [(s, t) for s, t, _ in groups] == [((0,), (1,)), ((1,), (0,))]


def test_links_below_theta_s_are_dropped():
    sources = np.stack([unit(1, 0, 0), unit(0, 0, 1)])
    targets = np.stack([unit(1, 0.2, 0), unit(0, 1, 0.3)])
    groups = align_sentences(sources, targets, k=1, theta_s=0.5)
    assert [(s, t) for s, t, _ in groups] == [((0,), (0,))]  # (s1, t1) has cosine ~0.29
    assert align_sentences(sources, targets, k=1, theta_s=0.99) == []


def test_k5_links_every_neighbour_above_threshold_into_n_to_m_group():
    sources = np.stack([unit(1, 0, 0), unit(1, 0.3, 0), unit(0, 0, 1)])
    targets = np.stack([unit(1, 0.1, 0), unit(0, 0, 1)])
    groups = align_sentences(sources, targets, k=5, theta_s=0.8)
    assert [(s, t) for s, t, _ in groups] == [((0, 1), (0,)), ((2,), (1,))]


def test_rerank_changes_which_neighbours_are_kept():
    word_score = {(0, 1): 0.9, (0, 0): 0.1, (1, 0): 0.9, (1, 1): 0.1}

    def rerank(source_idx: np.ndarray, target_idx: np.ndarray) -> np.ndarray:
        return np.array([word_score[(int(s), int(t))] for s, t in zip(source_idx, target_idx)], np.float32)

    groups = align_sentences(np.stack([S0, S1]), np.stack([T0, T1]), k=1, theta_s=0.5, rerank=rerank)
    assert [(s, t) for s, t, _ in groups] == [((0,), (1,)), ((1,), (0,))]


# --- mining ----------------------------------------------------------------------------------


def two_by_two_corpus() -> tuple[list[MiningDocument], list[MiningDocument], FakeEncoder]:
    """Source doc A (sentences about cats) matches target doc X; B (markets) matches Y."""
    encoder = FakeEncoder(
        {
            "The cat chased the mouse.": unit(1, 0, 0),
            "Stock markets fell sharply today.": unit(0, 1, 0),
            "A cat chased a mouse through the house, barking dogs and singing birds everywhere.": unit(1, 0.05, 0),
            "Markets fell.": unit(0.05, 1, 0),
            "Rain is expected.": unit(0, 0, 1),
            "Rain expected.": unit(0, 0.1, 1),
        }
    )
    source = [
        MiningDocument("A", ["The cat chased the mouse.", "Rain is expected."]),
        MiningDocument("B", ["Stock markets fell sharply today."]),
    ]
    target = [
        MiningDocument("Y", ["Markets fell."]),
        MiningDocument("X", ["A cat chased a mouse through the house, barking dogs and singing birds everywhere.", "Rain expected."]),
    ]
    return source, target, encoder


def test_mine_lha_pairs_documents_then_sentences_with_features():
    source, target, encoder = two_by_two_corpus()
    config = LHAConfig(k_documents=1, theta_d=0.5, k_sentences=1, theta_s=0.8, **NO_FILTERS)
    mined = list(mine_lha(source, target, encode=encoder, config=config))
    assert [(m.source_doc, m.target_doc, m.source, m.target) for m in mined] == [
        ("A", "X", (0,), (0,)),
        ("A", "X", (1,), (1,)),
        ("B", "Y", (0,), (0,)),
    ]
    assert all(m.method == "lha" and m.doc_score is not None and m.score >= 0.8 for m in mined)
    assert mined[1].features["overlap"] == pytest.approx(1.0)  # {rain, expected} both in the source
    assert mined[1].features["length_ratio"] == pytest.approx(len("Rain expected.") / len("Rain is expected."))
    assert all(count == 1 for count in encoder.calls.values())  # every sentence encoded once


def test_length_filter_drops_target_longer_than_ratio_times_source():
    source, target, encoder = two_by_two_corpus()
    config = LHAConfig(k_documents=1, k_sentences=1, theta_s=0.8, min_overlap=None, max_length_ratio=1.5)
    kept = {(m.source_doc, m.source) for m in mine_lha(source, target, encode=encoder, config=config)}
    assert kept == {("A", (1,)), ("B", (0,))}  # the 82-character cat sentence is > 1.5 x 25 characters


def test_overlap_filter_drops_pairs_below_min_overlap():
    source, target, encoder = two_by_two_corpus()
    config = LHAConfig(k_documents=1, k_sentences=1, theta_s=0.8, min_overlap=0.9, max_length_ratio=None)
    kept = {(m.source_doc, m.source) for m in mine_lha(source, target, encode=encoder, config=config)}
    assert kept == {("A", (1,)), ("B", (0,))}  # cat pair: 3 of 9 target content words occur in the source


def test_near_copy_filter_drops_pairs_closer_than_min_levenshtein_as_muss_does():
    source, target, encoder = two_by_two_corpus()
    kept = {}
    for distance in (None, 0.2, 0.1):
        config = LHAConfig(k_documents=1, k_sentences=1, theta_s=0.8, min_levenshtein=distance, **NO_FILTERS)
        kept[distance] = {(m.source_doc, m.source) for m in mine_lha(source, target, encode=encoder, config=config)}
    assert ("A", (1,)) in kept[None]  # "Rain is expected." ~ "Rain expected.": 3 edits in 17 characters, 0.18
    assert kept[0.2] == kept[None] - {("A", (1,))}
    assert kept[0.1] == kept[None]
    with pytest.raises(ValueError, match=r"min_levenshtein must lie in \[0, 1\] or be None, got 1.5"):
        LHAConfig(min_levenshtein=1.5)


def test_known_document_pairs_replace_the_document_step():
    source, target, encoder = two_by_two_corpus()
    config = LHAConfig(k_sentences=1, theta_s=0.8, **NO_FILTERS)
    mined = list(mine_lha(source, target, encode=encoder, config=config, document_pairs=[(1, 0)]))
    assert [(m.source_doc, m.target_doc) for m in mined] == [("B", "Y")]


def test_global_variant_finds_sentences_in_documents_the_document_step_misses():
    encoder = FakeEncoder({"cats": unit(1, 0, 0), "markets": unit(0, 1, 0), "cat": unit(1, 0.1, 0), "market": unit(0.1, 1, 0)})
    source = [MiningDocument("A", ["cats", "markets"])]
    target = [MiningDocument("X", ["cat"]), MiningDocument("Y", ["market"])]
    hierarchical = LHAConfig(k_documents=1, theta_d=0.5, k_sentences=1, theta_s=0.8, **NO_FILTERS)
    found = [(m.target_doc, m.source) for m in mine_lha(source, target, encode=encoder, config=hierarchical)]
    assert found == [("X", (0,))]  # both target documents tie; k_documents = 1 keeps the first
    global_config = LHAConfig(k_sentences=1, theta_s=0.8, global_variant=True, **NO_FILTERS)
    mined = list(mine_lha(source, target, encode=encoder, config=global_config))
    assert [(m.target_doc, m.source, m.target) for m in mined] == [("X", (0,), (0,)), ("Y", (1,), (0,))]
    expected = float(unit(1, 1, 0) @ unit(0.1, 1, 0))  # mean of A's sentences vs Y's only sentence
    assert mined[1].doc_score == pytest.approx(expected, abs=1e-5)


def test_mining_order_is_deterministic_by_document_then_sentence():
    source, target, encoder = two_by_two_corpus()
    config = LHAConfig(k_documents=2, theta_d=-1.0, k_sentences=2, theta_s=-1.0, **NO_FILTERS)
    first = [m.as_dict() for m in mine_lha(source, target, encode=encoder, config=config)]
    second = [m.as_dict() for m in mine_lha(source, target, encode=encoder, config=config)]
    assert first == second
    keys = [(m["source_doc"], m["target_doc"], m["source"][0], m["target"][0]) for m in first]
    assert [k[:2] for k in keys] == [("A", "Y"), ("A", "X"), ("B", "Y"), ("B", "X")]  # corpus order of targets
    assert keys == sorted(keys, key=lambda k: ("AB".index(k[0]), "YX".index(k[1]), k[2], k[3]))


def test_mine_lha_reranks_by_relaxed_wmd_over_token_vectors():
    vocabulary = {"alpha": 0, "beta": 1, "gamma": 2, "delta": 3}

    def token_vectors(sentences: Sequence[str]) -> list[np.ndarray]:
        return [np.eye(4, dtype=np.float32)[[vocabulary[w] for w in s.split()]] for s in sentences]

    # sentence vectors as S0/S1/T0/T1: by cosine everything chains; by words s0 = t1 and s1 = t0
    encoder = FakeEncoder({"alpha beta": S0, "gamma delta": S1, "delta gamma": T0, "beta alpha": T1})
    source = [MiningDocument("A", ["alpha beta", "gamma delta"])]
    target = [MiningDocument("X", ["delta gamma", "beta alpha"])]
    plain = LHAConfig(k_sentences=1, theta_s=0.5, **NO_FILTERS)
    assert [(m.source, m.target) for m in mine_lha(source, target, encode=encoder, config=plain, document_pairs=[(0, 0)])] == [
        ((0, 1), (0, 1))
    ]
    reranked = LHAConfig(k_sentences=1, theta_s=0.5, rerank="rwmd", rerank_depth=2, **NO_FILTERS)
    mined = mine_lha(source, target, encode=encoder, config=reranked, document_pairs=[(0, 0)], token_vectors=token_vectors)
    assert [(m.source, m.target) for m in mined] == [((0,), (1,)), ((1,), (0,))]


def test_rerank_without_token_vectors_is_refused():
    source, target, encoder = two_by_two_corpus()
    with pytest.raises(ValueError, match="token_vectors"):
        mine_lha(source, target, encode=encoder, config=LHAConfig(rerank="wmd"))


def test_document_pairs_out_of_range_are_refused_before_encoding():
    source, target, encoder = two_by_two_corpus()
    with pytest.raises(ValueError, match=r"document pair \(2, 0\)"):
        mine_lha(source, target, encode=encoder, config=LHAConfig(), document_pairs=[(2, 0)])
    assert encoder.calls == {}


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"k_documents": 0}, "k_documents"),
        ({"k_sentences": 1.5}, "k_sentences"),
        ({"theta_d": 1.2}, "theta_d"),
        ({"theta_s": -2}, "theta_s"),
        ({"min_overlap": 1.5}, "min_overlap"),
        ({"max_length_ratio": 0}, "max_length_ratio"),
        ({"rerank": "bm25"}, "rerank"),
        ({"rerank": "wmd", "k_sentences": 10, "rerank_depth": 5}, "rerank_depth"),
        ({"language": "fr"}, "language"),
        ({"global_variant": "yes"}, "global_variant"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(options: dict, field: str):
    with pytest.raises(ValueError, match=f"LHAConfig.{field}"):
        LHAConfig(**options)


# --- with the bundled MiniLM -----------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    return load_sentence_encoder(device="cpu")


@pytest.mark.slow
def test_minilm_finds_the_simplified_version_of_each_document(minilm):
    source = [
        MiningDocument(
            "volcano",
            [
                "The volcano erupted violently on Tuesday, forcing thousands to evacuate.",
                "Ash clouds disrupted flights across the region for several days.",
            ],
        ),
        MiningDocument(
            "football",
            [
                "The national football team secured a dramatic victory in the final minutes.",
                "Supporters celebrated in the streets until dawn.",
            ],
        ),
        MiningDocument(
            "bees",
            [
                "Scientists warn that bee populations are declining because of pesticide use.",
                "Farmers depend on bees to pollinate many important crops.",
            ],
        ),
    ]
    target = [
        MiningDocument("bees-simple", ["Farmers need bees for their crops.", "Scientists say there are fewer bees because of pesticides."]),
        MiningDocument(
            "volcano-simple", ["A volcano erupted on Tuesday and thousands of people had to leave.", "Ash clouds stopped flights for days."]
        ),
        MiningDocument(
            "football-simple", ["The football team won the final in the last minutes.", "Fans celebrated in the streets all night."]
        ),
    ]
    config = LHAConfig(k_documents=1, k_sentences=1, theta_s=0.5, min_overlap=0.2)
    mined = list(mine_lha(source, target, encode=lambda s: minilm.encode(s, batch_size=16), config=config))
    found = {(m.source_doc, m.target_doc, m.source, m.target) for m in mined}
    assert {(m.source_doc, m.target_doc) for m in mined} == {
        ("volcano", "volcano-simple"),
        ("football", "football-simple"),
        ("bees", "bees-simple"),
    }
    assert ("volcano", "volcano-simple", (0,), (0,)) in found
    assert ("bees", "bees-simple", (0,), (1,)) in found
