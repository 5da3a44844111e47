"""Dense, lexical and hybrid retrieval: hashed char 3-gram vectors, exact chunked search, the two fusions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from models_ml.mining.retrieval import (
    LEXICAL_DIMENSIONS,
    MAX_LEXICAL_NONZEROS,
    LexicalVectoriser,
    RetrievalConfig,
    _hashed_counts,
    _keep_heaviest,
    _trigram_columns,
    reciprocal_rank_fusion,
    retrieve,
)

GERMAN = [
    "Der Stadtrat hat am Dienstag eine neue Straßenbahnlinie beschlossen.",
    "Die Bienen sammeln im Sommer Nektar von tausenden Blüten.",
    "Im Krankenhaus warten viele Menschen auf einen Termin beim Arzt.",
    "Die Straßenbahn fährt vom Hafen bis zur Universität.",
    "Am Wochenende regnet es in ganz Norddeutschland.",
]


def long_sentence() -> str:
    """About 3,000 characters of distinct made-up words: far more than 1,000 distinct 3-grams."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzäöüß"))
    return " ".join("".join(rng.choice(letters, size=8)) for _ in range(330))


def test_lexical_vectors_fit_a_sparsevec_index_and_have_unit_length() -> None:
    sentences = [GERMAN[0], long_sentence(), "   "]
    vectors = LexicalVectoriser.fit(GERMAN + sentences).transform(sentences)
    nonzeros = np.diff(vectors.indptr)
    norms = np.sqrt(np.asarray(vectors.multiply(vectors).sum(axis=1)).ravel())
    assert vectors.shape == (3, LEXICAL_DIMENSIONS)
    assert nonzeros[1] == MAX_LEXICAL_NONZEROS and 0 < nonzeros[0] < MAX_LEXICAL_NONZEROS and nonzeros[2] == 0
    np.testing.assert_allclose(norms, [1.0, 1.0, 0.0], atol=1e-5)


def test_hashed_counts_equal_scikit_learns_hashing_vectoriser_on_any_text() -> None:
    """Stored IDFs and sparsevecs were made by scikit-learn's hashing: the numpy path must give the same columns and
    counts, whatever the script, case rules (İ lowers to two code points), astral characters, blanks or repeats."""
    from sklearn.feature_extraction.text import HashingVectorizer

    from models_ml.similarity.measures import char_trigrams

    sentences = GERMAN + [
        "", "   ", "\t\n", "a", "ab", "İstanbul ŞEHİR", "emoji 😀😀 and ǅ", "aaaaaaaaaa", "“quoted”—dash", long_sentence(),
        "Περίληψη του κειμένου", "日本語の文です。",
    ]  # fmt: skip
    hashing = HashingVectorizer(analyzer=char_trigrams, n_features=LEXICAL_DIMENSIONS, alternate_sign=False, norm=None, dtype=np.float32)
    expected = hashing.transform(sentences).tocsr()
    expected.sum_duplicates()
    counts = _hashed_counts(sentences)
    assert counts.shape == expected.shape and counts.dtype == np.float32 and counts.has_canonical_format
    assert np.array_equal(counts.indptr, expected.indptr)
    assert np.array_equal(counts.indices, expected.indices)
    assert np.array_equal(counts.data, expected.data)
    assert counts[sentences.index("aaaaaaaaaa")].sum() == 10  # " aa", "aaa" x 8, "aa ": repeats counted
    assert _hashed_counts(["", " "]).nnz == 0


def test_cutting_a_row_keeps_its_heaviest_entries_and_the_lower_column_on_ties() -> None:
    matrix = sparse.csr_matrix(np.array([[0.1, 0.5, 0.3, 0.5, 0.0], [0.2, 0.0, 0.0, 0.0, 0.9]], dtype=np.float32))
    cut = _keep_heaviest(matrix, 2).toarray()
    np.testing.assert_array_equal(cut, np.array([[0, 0.5, 0, 0.5, 0], [0.2, 0, 0, 0, 0.9]], dtype=np.float32))
    three = _keep_heaviest(sparse.csr_matrix(np.array([[0.4, 0.4, 0.4, 0.4]], dtype=np.float32)), 3).toarray()
    np.testing.assert_array_equal(three != 0, [[True, True, True, False]])


def test_exact_lexical_search_finds_a_near_duplicate_german_sentence_first() -> None:
    queries = ["Der Stadtrat beschloss am Dienstag eine neue Straßenbahnlinie.", "Bienen sammeln Nektar von Blüten."]
    found = retrieve(queries, GERMAN, 3, config=RetrievalConfig(retrieval="lexical"))
    assert found.indices[:, 0].tolist() == [0, 1]
    assert found.scores[0, 0] > 0.5 and np.all(np.diff(found.scores, axis=1) <= 0)


def test_chunked_lexical_search_equals_the_full_product() -> None:
    queries = [GERMAN[3], "Straßenbahn zum Hafen", "Regen am Wochenende", "Arzt"]
    chunked = retrieve(queries, GERMAN, 4, config=RetrievalConfig(retrieval="lexical", query_chunk=3, key_chunk=2))
    vectoriser = LexicalVectoriser.fit(GERMAN)
    full = (vectoriser.transform(queries) @ vectoriser.transform(GERMAN).T).toarray()  # (4, 5)
    expected = np.lexsort((np.broadcast_to(np.arange(5), full.shape), -full), axis=1)[:, :4]
    np.testing.assert_array_equal(chunked.indices, expected)
    np.testing.assert_allclose(chunked.scores, np.take_along_axis(full, expected, axis=1), atol=1e-6)


def fake_encode(vectors: dict[str, list[float]]):
    return lambda sentences: np.array([vectors[s] for s in sentences], dtype=np.float32)


def test_hybrid_ranks_first_the_sentence_first_in_both_views_with_either_fusion() -> None:
    # The query's lexical best is GERMAN[3]; its dense best is made GERMAN[3] too, while GERMAN[0]
    # is close in one view only.
    query = "Die Straßenbahn fährt vom Hafen zur Universität."
    dense = {query: [1, 0, 0], GERMAN[3]: [0.95, 0.3, 0], GERMAN[0]: [0.9, 0, 0.43]}
    dense.update({s: [0, 1, 0] for s in GERMAN if s not in dense})
    for fusion in ("rrf", "weighted"):
        config = RetrievalConfig(retrieval="hybrid", fusion=fusion)
        first = retrieve([query], GERMAN, 5, config=config, encode=fake_encode(dense))
        again = retrieve([query], GERMAN, 5, config=config, encode=fake_encode(dense))
        assert first.indices[0, 0] == 3, fusion
        np.testing.assert_array_equal(first.indices, again.indices)
        np.testing.assert_array_equal(first.scores, again.scores)


def test_reciprocal_rank_fusion_sums_one_over_rank_and_breaks_ties_by_index() -> None:
    dense = np.array([[7, 2, 5, -1]])
    lexical = np.array([[7, 5, 2, 9]])
    fused = reciprocal_rank_fusion([dense, lexical], 4, constant=60)
    assert fused.indices.tolist() == [[7, 2, 5, 9]]  # 2 and 5 tie at 1/62 + 1/63: the lower index first
    np.testing.assert_allclose(fused.scores[0], [2 / 61, 1 / 62 + 1 / 63, 1 / 62 + 1 / 63, 1 / 64])
    assert reciprocal_rank_fusion([dense], 6).indices.tolist() == [[7, 2, 5, -1, -1, -1]]


def test_retrieve_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        retrieve(["a"], ["b"], 0, config=RetrievalConfig(retrieval="lexical"))
    with pytest.raises(ValueError, match="needs an encoder"):
        retrieve(["a"], ["b"], 1, config=RetrievalConfig(retrieval="dense"))
    with pytest.raises(ValueError, match="no sentences"):
        retrieve(["a"], [], 1, config=RetrievalConfig(retrieval="lexical"))
    with pytest.raises(ValueError, match="unknown retrieval"):
        RetrievalConfig(retrieval="bm25")


def test_the_array_hash_of_a_3_gram_is_scikit_learns_for_every_mix_of_utf8_widths() -> None:
    """Every byte count from 3 to 12 (each code point 1 to 4 UTF-8 bytes), so every tail case of murmur3's blocks."""
    from sklearn.utils import murmurhash3_32

    rng = np.random.default_rng(7)
    ranges = [(0x20, 0x80), (0x80, 0x800), (0x800, 0xD800), (0xE000, 0x10000), (0x10000, 0x110000)]  # no surrogates
    points = np.array([[rng.integers(*ranges[rng.integers(len(ranges))]) for _ in range(3)] for _ in range(3000)], dtype=np.uint64)
    keys = points[:, 0] << np.uint64(42) | points[:, 1] << np.uint64(21) | points[:, 2]
    expected = [abs(int(murmurhash3_32("".join(map(chr, row.tolist())), seed=0))) % LEXICAL_DIMENSIONS for row in points]
    assert {len("".join(map(chr, row.tolist())).encode()) for row in points} == set(range(3, 13))
    assert _trigram_columns(keys).tolist() == expected
