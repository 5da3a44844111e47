"""MUSS paraphrase mining (models_ml.mining.muss): sequences, filters, margin, ACCESS attributes, sharding."""

from __future__ import annotations

import zlib
from collections.abc import Sequence as SequenceOf

import numpy as np
import pytest

from models_ml.mining import muss
from models_ml.mining.muss import (
    MussConfig,
    Sequence,
    candidate_sequences,
    is_noisy,
    mine_muss,
    ratio_margin,
    rejection_reason,
    replace_only_levenshtein_similarity,
    sequences,
)
from models_ml.mining.types import MiningDocument
from models_ml.similarity.encoders import load_sentence_encoder

DIM = 16


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def basis(i: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i] = 1.0
    return vector


class TableEncoder:
    """Fake encoder: chosen vectors for known texts, a fixed pseudo-random unit vector otherwise."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.calls: list[int] = []

    def __call__(self, texts: SequenceOf[str]) -> np.ndarray:
        self.calls.append(len(texts))
        rows = []
        for text in texts:
            if text in self.table:
                rows.append(unit(self.table[text]))
            else:
                rng = np.random.default_rng(zlib.crc32(text.encode()))
                rows.append(unit(rng.normal(size=DIM)))
        return np.stack(rows)  # (n, DIM)


APPROVED = "The city council approved the new budget on Tuesday."
PASSED = "On Tuesday, the new budget was passed by the municipal council."
FILLERS = [
    "Heavy rain flooded several villages in the north.",
    "She plays the cello in a small orchestra.",
    "Stock markets in Asia fell sharply overnight.",
    "The museum reopened after a long renovation.",
    "A new species of frog was found in the forest.",
]


def paraphrase_collection() -> tuple[list[MiningDocument], TableEncoder]:
    """Two documents holding a paraphrase (cosine 0.958) among unrelated, mutually orthogonal documents."""
    table = {APPROVED: basis(0), PASSED: basis(0) + 0.3 * basis(1)}
    table.update({text: basis(2 + i) for i, text in enumerate(FILLERS)})
    documents = [MiningDocument("a", [APPROVED]), MiningDocument("b", [PASSED])]
    documents += [MiningDocument(f"filler{i}", [text]) for i, text in enumerate(FILLERS)]
    return documents, TableEncoder(table)


def brute_force_mean_knn(vectors: np.ndarray, k: int) -> np.ndarray:
    scores = vectors @ vectors.T  # (n, n)
    np.fill_diagonal(scores, -np.inf)
    best = -np.sort(-scores, axis=1)[:, :k]  # (n, k)
    return best.mean(axis=1)


# Sequences and noise ---------------------------------------------------------------------------


def test_sequences_lists_every_window_up_to_the_limit_in_start_then_end_order() -> None:
    document = MiningDocument("d", ["Aa.", "Bb.", "Cc."])
    found = sequences(document, max_chars=7)
    assert [(s.start, s.end, s.text) for s in found] == [
        (0, 1, "Aa."),
        (0, 2, "Aa. Bb."),
        (1, 2, "Bb."),
        (1, 3, "Bb. Cc."),
        (2, 3, "Cc."),
    ]
    assert all(s.doc_id == "d" for s in found)
    assert [(s.start, s.end) for s in sequences(document, max_chars=11)][:3] == [(0, 1), (0, 2), (0, 3)]


def test_sequences_drop_long_sentences_and_never_span_them() -> None:
    long = "x" * 301
    document = MiningDocument("d", ["  First one.  ", long, "Third one.", ""])
    found = sequences(document, max_chars=300)
    assert [(s.start, s.end, s.text) for s in found] == [(0, 1, "First one."), (2, 3, "Third one.")]


def test_sequences_keep_a_window_of_exactly_max_chars() -> None:
    sentence = "y" * 149
    found = sequences(MiningDocument("d", [sentence, sentence]), max_chars=300)
    assert (0, 2) in [(s.start, s.end) for s in found]
    assert len(found[1].text) == 299
    assert (0, 2) not in [(s.start, s.end) for s in sequences(MiningDocument("d", [sentence, sentence]), max_chars=298)]


def test_is_noisy_counts_punctuation_among_non_space_characters() -> None:
    assert not is_noisy("This is a perfectly normal sentence.", 0.10)
    assert not is_noisy("abcdefghi.", 0.10)  # exactly 10 %: kept
    assert is_noisy("abcdefgh.,", 0.10)  # 20 %
    assert is_noisy("«Ja» — „nein“!", 0.10)  # Unicode punctuation counts
    assert is_noisy("   ", 0.10)
    with pytest.raises(ValueError, match="max_punctuation"):
        is_noisy("text", 1.5)


def test_candidate_sequences_drop_noisy_ones_and_reject_duplicate_document_ids() -> None:
    documents = [MiningDocument("a", ["A clean sentence here.", "!!! ??? ..."]), MiningDocument("b", ["Another clean one."])]
    texts = [s.text for s in candidate_sequences(documents, MussConfig())]
    assert texts == ["A clean sentence here.", "Another clean one."]  # the noisy window [0, 2) is dropped too
    with pytest.raises(ValueError, match="'a' occurs twice"):
        candidate_sequences([documents[0], documents[0]], MussConfig())


# Margin and filters ----------------------------------------------------------------------------


def test_ratio_margin_divides_the_cosine_by_the_mean_neighbourhood_similarity() -> None:
    assert ratio_margin(0.9, 0.5, 0.3) == pytest.approx(2.25)
    margins = ratio_margin(np.array([0.8, 0.4]), np.array([0.4, 0.4]), np.array([0.4, 0.4]))
    np.testing.assert_allclose(margins, [2.0, 1.0])
    assert ratio_margin(0.5, -0.2, 0.1) > 1e4  # non-positive neighbourhood mean is clamped, not sign-flipped


def make_sequence(doc_id: str, text: str) -> Sequence:
    return Sequence(doc_id, 0, 1, text)


def test_rejection_reason_names_each_filter() -> None:
    base = make_sequence("a", "The cat sat on the mat today.")
    assert rejection_reason(base, make_sequence("a", "Something else entirely."), min_levenshtein=0.2) == "same_document"
    other = make_sequence("b", "A dog lay on a rug yesterday.")
    assert rejection_reason(base, other, min_levenshtein=0.2) is None
    assert rejection_reason(base, other, min_levenshtein=0.2, exclude={"a dog lay on a rug yesterday."}) == "excluded"
    assert rejection_reason(base, make_sequence("b", "the CAT sat on the mat"), min_levenshtein=0.2) == "contained"
    assert rejection_reason(base, make_sequence("b", "THE CAT SAT ON THE HAT TODAY!"), min_levenshtein=0.2) == "near_identical"


def test_near_identical_threshold_is_strict_on_normalised_case_insensitive_distance() -> None:
    source = make_sequence("a", "abcdefghij")
    two_edits = make_sequence("b", "ABCDEFGHxy")  # distance 2 / 10 = 0.2: kept
    one_edit = make_sequence("b", "ABCDEFGHIx")  # 0.1: dropped
    assert rejection_reason(source, two_edits, min_levenshtein=0.2) is None
    assert rejection_reason(source, one_edit, min_levenshtein=0.2) == "near_identical"


# ACCESS attributes -----------------------------------------------------------------------------


def test_replace_only_levenshtein_ignores_insertions_and_deletions() -> None:
    assert replace_only_levenshtein_similarity("kitten", "sitting") == pytest.approx(1 - 2 / 6)
    assert replace_only_levenshtein_similarity("abc", "abcdef") == 1.0
    assert replace_only_levenshtein_similarity("abcdef", "abc") == 1.0
    assert replace_only_levenshtein_similarity("abc", "xyz") == 0.0
    assert replace_only_levenshtein_similarity("", "") == 1.0


# Mining with a fake encoder --------------------------------------------------------------------


def test_mine_muss_finds_the_paraphrase_with_its_margin_and_features(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(muss, "load_dependency_parser", lambda language: None)
    documents, encode = paraphrase_collection()
    config = MussConfig(k=3)
    pairs = list(mine_muss(documents, encode=encode, config=config))
    assert len(pairs) == 1
    pair = pairs[0]
    assert (pair.method, pair.source_doc, pair.target_doc, pair.source, pair.target) == ("muss", "a", "b", (0,), (0,))
    assert (pair.source_text, pair.target_text) == (APPROVED, PASSED)
    vectors = encode([APPROVED, PASSED, *FILLERS])  # (7, DIM) in candidate order
    cosine = float(vectors[0] @ vectors[1])
    means = brute_force_mean_knn(vectors, 3)
    assert pair.features["cosine"] == pytest.approx(cosine, abs=1e-6)
    assert pair.score == pytest.approx(cosine / ((means[0] + means[1]) / 2), rel=1e-5)
    assert pair.features["margin"] == pair.score
    assert pair.doc_score is None
    assert pair.features["char_ratio"] == pytest.approx(len(PASSED) / len(APPROVED))
    assert pair.features["word_rank_ratio"] is not None
    assert pair.features["dependency_depth_ratio"] is None


def test_mine_muss_keeps_only_pairs_under_the_distance_bound() -> None:
    documents, encode = paraphrase_collection()
    encode.table[PASSED] = basis(0) + 1.0 * basis(1)  # cosine 0.707: distance 0.293
    assert list(mine_muss(documents, encode=encode, config=MussConfig(k=3))) == []
    assert len(list(mine_muss(documents, encode=encode, config=MussConfig(k=3, max_distance=0.3)))) == 1


def test_mine_muss_drops_pairs_below_the_margin_threshold() -> None:
    documents, encode = paraphrase_collection()
    pair = next(mine_muss(documents, encode=encode, config=MussConfig(k=3)))
    assert list(mine_muss(documents, encode=encode, config=MussConfig(k=3, min_margin=pair.score + 0.01))) == []


def test_mine_muss_margin_drops_a_sequence_in_a_crowd_of_equally_close_neighbours() -> None:
    crowd = [
        "Tomorrow looks sunny with a light breeze.",
        "Forecasters expect clear skies and some wind.",
        "The weather should be bright and a bit windy.",
        "Expect sunshine tomorrow, plus a gentle wind.",
        "A dry, sunny day with breezes is predicted.",
    ]
    table = {text: basis(0) + 0.4 * basis(1 + i) for i, text in enumerate(crowd)}  # all pairs at cosine 0.862
    documents = [MiningDocument(f"c{i}", [text]) for i, text in enumerate(crowd)]
    pairs = list(mine_muss(documents, encode=TableEncoder(table), config=MussConfig(k=4, max_distance=0.3)))
    assert pairs == []  # margin exactly 1.0 < 1.06
    assert len(list(mine_muss(documents, encode=TableEncoder(table), config=MussConfig(k=4, max_distance=0.3, min_margin=0.99)))) == 10


def test_mine_muss_applies_the_exclude_set_case_insensitively() -> None:
    documents, encode = paraphrase_collection()
    pairs = list(
        mine_muss(
            documents, encode=encode, config=MussConfig(k=3), exclude={"  on tuesday, THE new budget was passed by the municipal council."}
        )
    )
    assert pairs == []


def test_mine_muss_drops_near_identical_contained_and_same_document_pairs() -> None:
    near = "The city council approved the new budget on Tuesday!"
    contained = "The city council approved the new budget"
    table = {APPROVED: basis(0), near: basis(0) + 0.1 * basis(1), contained: basis(0) + 0.1 * basis(2)}
    documents = [MiningDocument("a", [APPROVED]), MiningDocument("b", [near]), MiningDocument("c", [contained])]
    documents += [MiningDocument("s", ["Same document paraphrase one is here.", "Same document paraphrase two, another wording."])]
    table["Same document paraphrase one is here."] = basis(5)
    table["Same document paraphrase two, another wording."] = basis(5) + 0.1 * basis(6)
    assert list(mine_muss(documents, encode=TableEncoder(table), config=MussConfig(k=4, min_margin=0.5))) == []


def test_mine_muss_reports_multi_sentence_sequences_as_sentence_ranges() -> None:
    first, second = "The council met on Tuesday.", "It approved the new budget."
    joined = f"{first} {second}"
    target = "On Tuesday the municipal council passed its budget for next year."
    table = {joined: basis(0), target: basis(0) + 0.2 * basis(1), first: basis(3), second: basis(4)}
    documents = [MiningDocument("a", [first, second]), MiningDocument("b", [target])]
    pairs = list(mine_muss(documents, encode=TableEncoder(table), config=MussConfig(k=2)))
    assert [(p.source_doc, p.source, p.target_doc, p.target) for p in pairs] == [("a", (0, 1), "b", (0,))]


def clustered_collection(seed: int) -> tuple[list[MiningDocument], TableEncoder]:
    """24 documents in 8 topics of 3 noisy near-paraphrases each; random words keep the texts distinct."""
    rng = np.random.default_rng(seed)
    vocabulary = ["river", "bank", "green", "slowly", "market", "cloud", "signal", "paper", "light", "stone", "music", "winter"]
    centers = rng.normal(size=(8, DIM))  # (topics, DIM)
    documents, table = [], {}
    for i in range(24):
        text = " ".join(rng.choice(vocabulary, size=7)).capitalize() + f" {i}."
        table[text] = unit(centers[i % 8]) + 0.25 * unit(rng.normal(size=DIM))
        documents.append(MiningDocument(f"doc{i:02d}", [text]))
    return documents, TableEncoder(table)


def test_shard_union_equals_the_unsharded_result_and_each_pair_appears_once() -> None:
    documents, encode = clustered_collection(seed=3)
    config = MussConfig(k=3, max_distance=0.5, min_margin=1.0, min_levenshtein=0.0)
    whole = list(mine_muss(documents, encode=encode, config=config))
    assert len(whole) >= 8
    shards = [(0, 5), (5, 6), (6, 17), (17, 1000)]
    union = [pair for shard in shards for pair in mine_muss(documents, encode=encode, config=config, query_range=shard)]
    assert union == whole
    unordered = [frozenset({(p.source_doc, p.source), (p.target_doc, p.target)}) for p in whole]
    assert len(unordered) == len(set(unordered))
    assert all(p.source_doc < p.target_doc for p in whole)  # oriented: the lower sequence index is the source


def test_a_pair_found_only_from_the_larger_index_is_yielded_by_that_shard() -> None:
    anchor, twin, late = (
        "An anchor sentence about rivers.",
        "A close twin that discusses streams.",
        "Late arrival mentioning waterways too.",
    )
    table = {anchor: basis(0), twin: basis(0) + 0.2 * basis(1), late: basis(0) + 0.5 * basis(2)}
    documents = [MiningDocument("a", [anchor]), MiningDocument("m", [twin]), MiningDocument("q", [late])]
    config = MussConfig(k=1, min_margin=0.9)  # anchor's single neighbour is the twin; late's is the anchor
    whole = [(p.source_doc, p.target_doc) for p in mine_muss(documents, encode=TableEncoder(table), config=config)]
    assert whole == [("a", "m"), ("a", "q")]
    last_shard = [(p.source_doc, p.target_doc) for p in mine_muss(documents, encode=TableEncoder(table), config=config, query_range=(2, 3))]
    assert last_shard == [("a", "q")]


def test_mine_muss_is_deterministic_and_encodes_in_batches() -> None:
    documents, encode = clustered_collection(seed=5)
    config = MussConfig(k=3, max_distance=0.5, min_margin=1.0, encode_batch=10)
    first = [pair.as_dict() for pair in mine_muss(documents, encode=encode, config=config)]
    assert encode.calls == [10, 10, 4]
    second = [pair.as_dict() for pair in mine_muss(documents, encode=encode, config=config)]
    assert first == second and first


def test_mine_muss_rejects_bad_arguments() -> None:
    documents, encode = paraphrase_collection()
    with pytest.raises(ValueError, match="query_range"):
        list(mine_muss(documents, encode=encode, config=MussConfig(), query_range=(3, 1)))
    with pytest.raises(ValueError, match="encode returned shape"):
        list(mine_muss(documents, encode=lambda texts: np.zeros((1, DIM)), config=MussConfig()))
    with pytest.raises(ValueError, match="k must be"):
        MussConfig(k=0)
    with pytest.raises(ValueError, match="max_distance"):
        MussConfig(max_distance=0.0)
    with pytest.raises(ValueError, match="min_levenshtein"):
        MussConfig(min_levenshtein=1.5)
    assert list(mine_muss(documents, encode=encode, config=MussConfig(), query_range=(50, 60))) == []


# Mining with the bundled MiniLM ----------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_encode():
    encoder = load_sentence_encoder(device="cpu")
    return lambda texts: encoder.encode(texts, batch_size=32)


def test_minilm_mines_english_paraphrases_and_not_contradicting_neighbours(minilm_encode) -> None:
    documents = [
        MiningDocument("news1", [APPROVED]),
        MiningDocument("news2", ["On Tuesday, the new budget was passed by the city council."]),
        MiningDocument("news3", ["The city council rejected the budget."]),
        MiningDocument("weather1", ["Heavy rain caused flooding in several villages."]),
        MiningDocument("weather2", ["Several villages were flooded after heavy rainfall."]),
        MiningDocument("misc", ["He plays the piano every evening.", "Stock markets fell sharply in Asia."]),
    ]
    pairs = list(mine_muss(documents, encode=minilm_encode, config=MussConfig()))
    found = {(p.source_doc, p.target_doc) for p in pairs}
    assert found == {("news1", "news2"), ("weather1", "weather2")}
    assert all(p.features["cosine"] > 0.75 and p.score >= 1.06 for p in pairs)
