"""Pair scoring decodes small pairs on one torch thread and scores on one BLAS thread (same results, thread counts restored afterwards) and stores what it decoded."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from alignment.aligning import scoring
from alignment.aligning.scoring import PairScorer, SideSentences
from models_ml.aligning.aligner import Aligner
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR
from models_ml.similarity.measures import build_measure

DEMO = Path(scoring.__file__).resolve().parents[1] / "demo_corpus"


@pytest.fixture
def two_torch_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _side(path: Path, first_id: int) -> SideSentences:
    """The demo file's sentences (split at . ! ? before a space) with their paragraph numbers."""
    texts, paragraphs = [], []
    for number, paragraph in enumerate(p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()):
        for sentence in re.split(r"(?<=[.!?”])\s+", paragraph.strip()):
            texts.append(sentence)
            paragraphs.append(number)
    return SideSentences(list(range(first_id, first_id + len(texts))), texts, paragraphs)


def _shipped_scorer() -> PairScorer:
    aligner = Aligner.load(DEFAULT_MODEL_DIR, device="cpu")
    return PairScorer(
        aligner, ["learned", "tfidf_cosine", "jaccard"], build=lambda name: aligner.measure if name == "learned" else build_measure(name)
    )


def _record_threads(scorer: PairScorer) -> list[int]:
    seen: list[int] = []
    align = scorer.aligner.align

    def recording_align(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return align(*args, **kwargs)

    scorer.aligner.align = recording_align  # type: ignore[method-assign]
    return seen


def test_a_small_pair_is_decoded_on_one_thread_and_the_count_is_restored(two_torch_threads) -> None:
    scorer = _shipped_scorer()
    seen = _record_threads(scorer)
    scorer.score(_side(DEMO / "Honeybees-ele.txt", 100), _side(DEMO / "Honeybees-adv.txt", 1))
    assert seen == [1]
    assert torch.get_num_threads() == 2


def test_a_pair_with_more_states_than_the_limit_keeps_the_thread_pool(two_torch_threads, monkeypatch) -> None:
    monkeypatch.setattr(scoring, "ONE_THREAD_MAX_STATES", 5)
    scorer = _shipped_scorer()
    seen = _record_threads(scorer)
    scorer.score(_side(DEMO / "Honeybees-ele.txt", 100), _side(DEMO / "Honeybees-adv.txt", 1))
    assert seen == [2]


def test_one_thread_decoding_stores_the_same_candidates_and_scores(two_torch_threads, monkeypatch) -> None:
    outcomes = []
    for limit in (scoring.ONE_THREAD_MAX_STATES, 0):  # one thread, then the thread pool
        monkeypatch.setattr(scoring, "ONE_THREAD_MAX_STATES", limit)
        outcomes.append(_shipped_scorer().score(_side(DEMO / "DeepSea-ele.txt", 100), _side(DEMO / "DeepSea-adv.txt", 1)))
    single, pooled = outcomes
    assert single.candidates and single.result.groups
    assert single.candidates == pooled.candidates  # pairs, every measure's score, CRF marginal, label, group
    assert single.result.groups == pooled.result.groups
    assert np.array_equal(single.result.pair_marginals, pooled.result.pair_marginals)
    assert scoring.pack_matrices(single) == scoring.pack_matrices(pooled)  # the heatmaps the pair page shows


def test_the_stored_matrix_of_the_measure_the_crf_read_is_the_one_it_decoded_bit_for_bit() -> None:
    """The live refresh re-decodes from what was stored: a float16 copy decided a near-tie the other way."""
    outcome = _shipped_scorer().score(_side(DEMO / "DeepSea-ele.txt", 100), _side(DEMO / "DeepSea-adv.txt", 1))
    stored = scoring.unpack_matrices(scoring.pack_matrices(outcome))
    assert outcome.primary == "learned" and np.array_equal(stored["learned"], outcome.matrices["learned"])
    assert stored["tfidf_cosine"].dtype == np.float32  # the heatmaps' measures come back as float32 too (stored smaller)
    assert np.allclose(stored["tfidf_cosine"], outcome.matrices["tfidf_cosine"], atol=1e-3)


def test_heatmaps_stored_in_the_numpy_zip_before_read_as_the_ones_stored_now() -> None:
    """Runs stored before the heatmaps' own format kept numpy's zip: both read back the same matrices."""
    outcome = _shipped_scorer().score(_side(DEMO / "DeepSea-ele.txt", 100), _side(DEMO / "DeepSea-adv.txt", 1))
    now = scoring.pack_matrices(outcome)
    arrays = {name: matrix.astype(np.float32 if name == outcome.primary else np.float16) for name, matrix in outcome.matrices.items()}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, crf_marginal=outcome.result.pair_marginals.astype(np.float16))
    before, after = scoring.unpack_matrices(buffer.getvalue()), scoring.unpack_matrices(memoryview(now))
    assert now.startswith(scoring.MATRICES_FORMAT) and len(now) < len(buffer.getvalue())
    assert list(after) == list(before) == [*outcome.matrices, "crf_marginal"]
    for name, matrix in before.items():
        assert after[name].dtype == np.float32 and after[name].shape == matrix.shape == outcome.result.similarity.shape
        assert np.array_equal(after[name], matrix), name


def _blas_threads() -> set[int]:
    """The thread counts of numpy's and scipy's BLAS (other libraries bring their own, e.g. faiss, which scoring never calls)."""
    from threadpoolctl import threadpool_info

    pools = [
        pool for pool in threadpool_info() if pool["user_api"] == "blas" and ("numpy" in pool["filepath"] or "scipy" in pool["filepath"])
    ]
    assert pools, "numpy's BLAS is loaded"
    return {pool["num_threads"] for pool in pools}


@pytest.fixture
def two_blas_threads():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # so that one thread is a change on any machine
        yield


def test_a_pair_is_scored_with_one_blas_thread_and_the_count_is_restored(two_blas_threads) -> None:
    assert _blas_threads() == {2}
    scorer = _shipped_scorer()
    seen: list[set[int]] = []
    align = scorer.aligner.align

    def recording_align(*args, **kwargs):
        seen.append(_blas_threads())
        return align(*args, **kwargs)

    scorer.aligner.align = recording_align  # type: ignore[method-assign]
    scorer.score(_side(DEMO / "Honeybees-ele.txt", 100), _side(DEMO / "Honeybees-adv.txt", 1))
    assert seen == [{1}]
    assert _blas_threads() == {2}


def test_the_blas_count_is_restored_when_the_block_fails(two_blas_threads) -> None:
    with pytest.raises(RuntimeError), scoring.one_blas_thread():
        assert _blas_threads() == {1}
        raise RuntimeError("a pair failed")
    assert _blas_threads() == {2}


def test_one_blas_thread_scores_the_same(two_blas_threads, monkeypatch) -> None:
    pooled = _shipped_scorer()._score(_side(DEMO / "DeepSea-ele.txt", 100), _side(DEMO / "DeepSea-adv.txt", 1))
    single = _shipped_scorer().score(_side(DEMO / "DeepSea-ele.txt", 100), _side(DEMO / "DeepSea-adv.txt", 1))
    assert single.candidates == pooled.candidates
    assert scoring.pack_matrices(single) == scoring.pack_matrices(pooled)
