"""The in-memory hybrid index against the exact fused search, and the lexical view's IDF as a job stores it."""

from __future__ import annotations

import numpy as np
import pytest

from models_ml.mining.hybrid_index import HybridIndex, _pruned_postings, exact_hybrid
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS, LexicalVectoriser, document_frequency

SENTENCES = [
    "Der Gemeinderat hat den Haushalt beschlossen.",
    "Den Haushalt hat der Gemeinderat beschlossen.",
    "Im Hafen liegen viele kleine Boote.",
    "Viele kleine Boote liegen im Hafen.",
    "Die Bibliothek bleibt im August geschlossen.",
    "Im August ist die Bibliothek geschlossen.",
    "Starker Regen überflutete die Altstadt.",
    "Die Mannschaft gewann das Spiel.",
    "Das Spiel gewann die Mannschaft klar.",
    "Ein ganz anderer Satz über Katzen.",
]


def _views(seed: int = 0):
    rng = np.random.default_rng(seed)
    lexical = LexicalVectoriser.fit(SENTENCES).transform(SENTENCES)
    dense = rng.normal(size=(len(SENTENCES), 16)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    ids = np.arange(len(SENTENCES)) * 3 + 5  # the caller's keys, not row numbers
    return dense, lexical, ids


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
def test_with_every_row_a_candidate_the_index_equals_the_exact_fused_search(weight) -> None:
    dense, lexical, ids = _views()
    index = HybridIndex(dense, lexical, ids, dense_weight=weight, depth=len(ids))
    found = index.search_ids(ids, 4)
    expected = exact_hybrid(dense, lexical, ids, 4, dense_weight=weight)
    assert found.indices.tolist() == expected.indices.tolist()
    assert found.scores == pytest.approx(expected.scores, abs=1e-5)
    assert not np.any(found.indices == ids[:, None])  # never itself


def test_shallow_candidates_still_find_the_lexical_twin_and_pad_when_few_rows_exist() -> None:
    dense, lexical, ids = _views(1)
    index = HybridIndex(dense, lexical, ids, dense_weight=0.3, depth=1, probe=4)
    found = index.search_ids(ids[[0, 2]], 1)  # the twin shares its rarest 3-grams
    assert found.indices[:, 0].tolist() == [ids[1], ids[3]]
    few = HybridIndex(dense[:3], lexical[:3], ids[:3], dense_weight=0.3).search_ids(ids[:1], 5)
    assert few.indices[0, 2:].tolist() == [-1, -1, -1] and np.isneginf(few.scores[0, 2:]).all()


def test_bad_input_is_refused_with_what_is_wrong() -> None:
    dense, lexical, ids = _views()
    with pytest.raises(ValueError, match="ids must be unique and increasing"):
        HybridIndex(dense, lexical, ids[::-1], dense_weight=0.3)
    with pytest.raises(ValueError, match="need dense"):
        HybridIndex(dense[:3], lexical, ids, dense_weight=0.3)
    with pytest.raises(ValueError, match="0 <= dense_weight <= 1"):
        HybridIndex(dense, lexical, ids, dense_weight=1.5)
    with pytest.raises(ValueError, match="ids not in the index"):
        HybridIndex(dense, lexical, ids, dense_weight=0.3).search_ids(np.array([4]), 2)


def test_document_frequency_summed_over_batches_gives_the_fitted_idf_and_survives_storage() -> None:
    frequency = document_frequency(SENTENCES[:4]) + document_frequency(SENTENCES[4:])
    streamed = LexicalVectoriser.from_document_frequency(frequency, len(SENTENCES))
    fitted = LexicalVectoriser.fit(SENTENCES)
    assert np.array_equal(streamed.idf, fitted.idf)
    stored = LexicalVectoriser.from_bytes(fitted.to_bytes())
    assert np.array_equal(stored.idf, fitted.idf) and len(fitted.to_bytes()) < 20_000
    with pytest.raises(ValueError, match="document frequencies of at most 1 sentences"):
        LexicalVectoriser.from_document_frequency(frequency, 1)
    with pytest.raises(ValueError, match=f"need \\({LEXICAL_DIMENSIONS},\\)"):
        LexicalVectoriser.from_document_frequency(frequency[:10], len(SENTENCES))


def test_pruned_inverted_lists_keep_each_3_gram_s_heaviest_rows_and_still_find_the_twin() -> None:
    dense, lexical, ids = _views(1)
    inverted = lexical.T.tocsr()  # (D, n)
    pruned = _pruned_postings(lexical, 2)
    assert np.diff(pruned.indptr).max() == 2 < np.diff(inverted.indptr).max()  # " di" and others are in more rows
    gram = int(np.argmax(np.diff(inverted.indptr)))  # the most common 3-gram: its two heaviest rows stay
    weights = inverted[gram].toarray().ravel()
    assert set(pruned[gram].indices.tolist()) == set(np.argsort(-weights, kind="stable")[:2].tolist())
    index = HybridIndex(dense, lexical, ids, dense_weight=0.3, depth=1, probe=4, postings=2)
    assert index.search_ids(ids[[0, 2]], 1).indices[:, 0].tolist() == [ids[1], ids[3]]  # a twin's rare 3-grams have short lists
    with pytest.raises(ValueError, match="postings >= 1"):
        HybridIndex(dense, lexical, ids, dense_weight=0.3, postings=0)


def test_chunks_scored_on_several_threads_give_what_one_thread_gives_in_the_queries_order(monkeypatch) -> None:
    """More queries than one chunk: each chunk is scored on its own thread and the results come back in order."""
    from models_ml.mining import hybrid_index

    monkeypatch.setattr(hybrid_index, "PAIR_CHUNK", 3)  # 10 queries: four chunks
    dense, lexical, ids = _views(2)
    one = HybridIndex(dense, lexical, ids, dense_weight=0.3, depth=4, threads=1).search_ids(ids[::-1], 3)
    several = HybridIndex(dense, lexical, ids, dense_weight=0.3, depth=4, threads=3).search_ids(ids[::-1], 3)
    exact = exact_hybrid(dense, lexical, ids, 3, dense_weight=0.3)
    assert several.indices.tolist() == one.indices.tolist()
    assert several.scores.tolist() == one.scores.tolist()
    assert several.indices[:, 0].tolist() == exact.indices[::-1, 0].tolist()  # each query's own best, in its place
