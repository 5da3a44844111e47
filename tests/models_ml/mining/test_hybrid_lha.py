"""Hybrid LHA: the concatenated rows' inner products are exactly the fused scores, the document step is the exact
fused search, the IDF counts documents, and a dense weight of 1 gives plain LHA back."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer

from models_ml.mining.hybrid_lha import (
    document_text,
    document_vectoriser,
    fused_vectors,
    hybrid_document_neighbours,
    mine_hybrid_lha,
)
from models_ml.mining.lha import LHAConfig, mine_lha
from models_ml.mining.retrieval import LEXICAL_DIMENSIONS
from models_ml.mining.types import MiningDocument

SOURCE = [
    ["Der Gemeinderat hat am Montag den Haushalt beschlossen.", "Im Hafen liegen viele kleine Boote.", "Ein Satz."],
    ["Starker Regen hat die Altstadt überflutet.", "Die Mannschaft gewann das Spiel mit drei zu eins.", "..."],
]
TARGET = [
    ["Die Mannschaft hat das Spiel gewonnen.", "Regen hat die Altstadt überflutet."],
    ["Der Gemeinderat hat den Haushalt beschlossen.", "Viele kleine Boote liegen im Hafen."],
    ["Die Bibliothek bleibt im August geschlossen."],
]


def _unit_rows(count: int, width: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(count, width)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _lexical():
    vectoriser = document_vectoriser(SOURCE + TARGET)
    return vectoriser, vectoriser.transform(SOURCE[0]), vectoriser.transform(TARGET[1])


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.3, 1.0])
def test_concatenated_rows_give_exactly_the_fused_matrix(weight) -> None:
    _, lexical_source, lexical_target = _lexical()
    dense_source, dense_target = _unit_rows(3, 8, 0), _unit_rows(2, 8, 1)
    source, target = fused_vectors(dense_source, dense_target, lexical_source, lexical_target, dense_weight=weight)
    explicit = weight * dense_source @ dense_target.T + (1 - weight) * (lexical_source @ lexical_target.T).toarray()  # (3, 2)
    assert source @ target.T == pytest.approx(explicit, abs=1e-5)
    assert np.linalg.norm(source, axis=1) == pytest.approx(np.ones(3), abs=1e-5)  # unit rows, as align_sentences expects
    assert source.shape[1] == 8 + len(np.union1d(lexical_source.indices, lexical_target.indices)) < 8 + 400


def test_a_sentence_without_3_grams_scores_by_its_dense_part_only() -> None:
    vectoriser = document_vectoriser(SOURCE + TARGET)
    lexical_source, lexical_target = vectoriser.transform(["", "Im Hafen."]), vectoriser.transform(["Im Hafen liegen Boote."])
    dense_source, dense_target = _unit_rows(2, 4, 2), _unit_rows(1, 4, 3)
    source, target = fused_vectors(dense_source, dense_target, lexical_source, lexical_target, dense_weight=0.3)
    assert (source @ target.T)[0, 0] == pytest.approx(0.3 * float(dense_source[0] @ dense_target[0]), abs=1e-6)


@pytest.mark.parametrize("weight", [-0.1, 1.5, "half", True])
def test_a_dense_weight_outside_0_to_1_is_refused(weight) -> None:
    _, lexical_source, lexical_target = _lexical()
    with pytest.raises(ValueError, match="dense_weight must be a number from 0 to 1"):
        fused_vectors(_unit_rows(3, 4, 0), _unit_rows(2, 4, 1), lexical_source, lexical_target, dense_weight=weight)


def test_rows_that_do_not_match_are_refused() -> None:
    _, lexical_source, lexical_target = _lexical()
    with pytest.raises(ValueError, match="lexical rows for"):
        fused_vectors(_unit_rows(2, 4, 0), _unit_rows(2, 4, 1), lexical_source, lexical_target, dense_weight=0.3)
    with pytest.raises(ValueError, match="same width"):
        fused_vectors(_unit_rows(3, 4, 0), _unit_rows(2, 5, 1), lexical_source, lexical_target, dense_weight=0.3)


def test_the_idf_counts_documents_and_document_rows_are_unit() -> None:
    vectoriser = document_vectoriser(SOURCE + TARGET, batch=2)  # batches sum to the whole collection's counts
    assert np.array_equal(vectoriser.idf, document_vectoriser(SOURCE + TARGET).idf)
    rows = vectoriser.transform([document_text(d) for d in SOURCE])
    assert rows.shape == (2, LEXICAL_DIMENSIONS) and np.diff(rows.indptr).max() <= 1000
    assert np.linalg.norm(rows.toarray(), axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    column = HashingVectorizer(analyzer=lambda gram: [gram], n_features=LEXICAL_DIMENSIONS, alternate_sign=False)
    common = column.transform([" ha"]).indices[0]  # " ha" is in 4 of the 5 documents (in 6 of 13 sentences), "übe" in 2
    rare = column.transform(["übe"]).indices[0]
    assert vectoriser.idf[common] == pytest.approx(np.log(6 / 5) + 1) and vectoriser.idf[rare] == pytest.approx(np.log(6 / 3) + 1)


def test_the_document_step_is_the_exact_fused_search() -> None:
    vectoriser = document_vectoriser(SOURCE + TARGET)
    lexical_source = vectoriser.transform([document_text(d) for d in SOURCE])
    lexical_target = vectoriser.transform([document_text(d) for d in TARGET])
    dense_source, dense_target = _unit_rows(2, 6, 4), _unit_rows(3, 6, 5)
    found = hybrid_document_neighbours(dense_source, dense_target, lexical_source, lexical_target, k=2, theta_d=0.1, dense_weight=0.3)
    fused = 0.3 * dense_source @ dense_target.T + 0.7 * (lexical_source @ lexical_target.T).toarray()  # (2, 3)
    expected = [(s, int(t), float(fused[s, t])) for s in range(2) for t in np.argsort(-fused[s])[:2] if fused[s, t] >= 0.1]
    assert [(s, t) for s, t, _ in found] == [(s, t) for s, t, _ in expected]
    assert [v for _, _, v in found] == pytest.approx([v for _, _, v in expected], abs=1e-5)
    assert sparse.issparse(lexical_source)


class _Encoder:
    """Fixed random unit vectors per sentence (the same sentence, the same vector)."""

    def __call__(self, sentences):
        return np.stack([_unit_rows(1, 16, abs(hash(s)) % 2**32)[0] for s in sentences])


def test_with_all_weight_on_the_dense_cosine_hybrid_lha_is_plain_lha() -> None:
    source = [MiningDocument(f"s{i}", d) for i, d in enumerate(SOURCE)]
    target = [MiningDocument(f"t{i}", d) for i, d in enumerate(TARGET)]
    config = LHAConfig(language="de", k_documents=2, theta_d=-1.0, theta_s=-1.0, min_overlap=None, max_length_ratio=None)
    dense = list(mine_lha(source, target, encode=_Encoder(), config=config))
    hybrid = list(mine_hybrid_lha(source, target, encode=_Encoder(), config=config, dense_weight=1.0))
    assert dense and [(m.source_doc, m.target_doc, m.source, m.target) for m in hybrid] == [
        (m.source_doc, m.target_doc, m.source, m.target) for m in dense
    ]
    assert [m.score for m in hybrid] == pytest.approx([m.score for m in dense], abs=1e-5)


def test_hybrid_lha_pairs_the_sentences_that_share_words() -> None:
    source = [MiningDocument(f"s{i}", d) for i, d in enumerate(SOURCE)]
    target = [MiningDocument(f"t{i}", d) for i, d in enumerate(TARGET)]
    config = LHAConfig(language="de", k_documents=1, theta_d=0.0, k_sentences=1, theta_s=0.3)
    mined = {(m.source_text, m.target_text) for m in mine_hybrid_lha(source, target, encode=_Encoder(), config=config, dense_weight=0.1)}
    assert (SOURCE[0][0], TARGET[1][0]) in mined and (SOURCE[1][0], TARGET[0][1]) in mined
    with pytest.raises(ValueError, match="no re-ranking"):
        mine_hybrid_lha(source, target, encode=_Encoder(), config=LHAConfig(global_variant=True), dense_weight=0.3)
