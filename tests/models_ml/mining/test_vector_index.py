"""The optional faiss index returns what the exact search returns, in knn.top_k's shape."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from models_ml.mining.knn import normalise, top_k
from models_ml.mining.vector_index import FaissIndex, FaissMissing, faiss_available


def _vectors(n: int, d: int = 32, seed: int = 0) -> np.ndarray:
    return normalise(np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32))


def test_exact_index_equals_top_k_with_the_callers_ids_and_the_query_itself_left_out() -> None:
    keys = _vectors(500)
    ids = np.arange(1000, 1500)  # the caller's keys, not row numbers
    index = FaissIndex(keys, ids)
    assert index.exact
    found = index.search(keys[:40], 7, exclude=ids[:40])
    expected = top_k(keys[:40], keys, 7, exclude_self=True)
    assert np.array_equal(found.indices, ids[expected.indices])
    assert np.allclose(found.scores, expected.scores, atol=1e-5)
    assert not np.any(found.indices == ids[:40, None])


def test_hnsw_index_above_the_exact_limit_finds_most_true_neighbours() -> None:
    keys = _vectors(4000, seed=1)
    index = FaissIndex(keys, np.arange(4000), exact_below=1000, ef_search=100)
    assert not index.exact
    found = index.search(keys[:100], 10, exclude=np.arange(100))
    truth = top_k(keys[:100], keys, 10, exclude_self=True)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.indices, truth.indices)])
    assert recall >= 0.9, recall


def test_fewer_vectors_than_k_pads_with_minus_one_as_top_k_does() -> None:
    keys = _vectors(3)
    found = FaissIndex(keys, np.array([5, 6, 7])).search(keys[:1], 4, exclude=np.array([5]))
    assert found.indices.tolist() == [[*top_k(keys[:1], keys, 2, exclude_self=True).indices[0] + 5, -1, -1]]
    assert np.isneginf(found.scores[0, 2:]).all()


@pytest.mark.parametrize(
    ("vectors", "ids", "message"),
    [
        (np.zeros((0, 4)), np.zeros(0), "n >= 1"),
        (np.zeros((3, 4)), np.zeros(2), "one id each"),
        (np.zeros(4), np.zeros(1), "vectors"),
    ],
)
def test_bad_collections_are_refused_with_their_shapes(vectors, ids, message) -> None:
    with pytest.raises(ValueError, match=message):
        FaissIndex(vectors, ids)


def test_bad_queries_and_k_are_refused() -> None:
    index = FaissIndex(_vectors(10), np.arange(10))
    with pytest.raises(ValueError, match=r"queries must be \(q, 32\)"):
        index.search(np.zeros((2, 8)), 3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search(np.zeros((2, 32)), 0)


def test_without_faiss_installed_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # what ``import faiss`` meets when faiss-cpu is absent
    assert not faiss_available()
    with pytest.raises(FaissMissing, match="pip install faiss-cpu"):
        FaissIndex(_vectors(3), np.arange(3))


def test_search_by_ids_of_stored_vectors_equals_searching_with_the_vectors() -> None:
    keys = _vectors(300, seed=2)
    ids = np.arange(0, 600, 2)
    index = FaissIndex(keys, ids)
    by_id = index.search_ids(ids[10:20], 5)
    by_vector = index.search(keys[10:20], 5, exclude=ids[10:20])
    assert np.array_equal(by_id.indices, by_vector.indices) and np.allclose(by_id.scores, by_vector.scores)
    with pytest.raises(ValueError, match=r"ids not in the index: \[1, 601\]"):
        index.search_ids(np.array([0, 1, 601]), 5)


def test_ids_must_be_unique_and_increasing() -> None:
    with pytest.raises(ValueError, match="unique and increasing"):
        FaissIndex(_vectors(3), np.array([0, 2, 1]))


def test_the_vectors_go_in_by_chunks_with_the_callers_check_between_them_and_a_raising_check_stops_the_build(monkeypatch) -> None:
    from models_ml.mining import vector_index

    monkeypatch.setattr(vector_index, "ADD_CHUNK", 40)
    keys, ids = _vectors(100), np.arange(100)
    between = []
    index = FaissIndex(keys, ids, exact_below=10, between_chunks=lambda: between.append(1))  # HNSW, three chunks
    assert len(between) == 2 and not index.exact  # after the first and second chunks, not after the last
    found = index.search(keys[:5], 1, exclude=ids[:5])
    assert np.array_equal(found.indices[:, 0], top_k(keys[:5], keys, 1, exclude_self=True).indices[:, 0])

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        FaissIndex(keys, ids, between_chunks=stop)


def test_an_index_built_from_chunks_of_any_size_is_the_graph_built_from_the_whole_collection(monkeypatch) -> None:
    """The prepare streams the stored vectors chunk by chunk instead of holding the collection beside the index."""
    from models_ml.mining import vector_index

    monkeypatch.setattr(vector_index, "ADD_CHUNK", 40)
    keys, ids = _vectors(100, seed=3), np.arange(100) * 2 + 1
    whole = FaissIndex(keys, ids, exact_below=10, ef_search=20)
    bounds = [0, 25, 55, 100]  # chunks of 25, 30 and 45 vectors: added as 40, 40 and 20 all the same
    between = []
    chunked = FaissIndex.from_chunks(
        ((ids[a:b], keys[a:b]) for a, b in zip(bounds, bounds[1:])), 100, exact_below=10, ef_search=20,
        between_chunks=lambda: between.append(1),
    )  # fmt: skip
    assert not chunked.exact and chunked.size == 100 and len(between) == 2
    import faiss

    def graph(index: FaissIndex) -> tuple[list, list]:
        return faiss.vector_to_array(index._index.hnsw.neighbors).tolist(), faiss.vector_to_array(index._index.hnsw.levels).tolist()

    assert graph(chunked) == graph(whole)  # the same links, not only the same answers
    expected, found = whole.search_ids(ids, 6), chunked.search_ids(ids, 6)
    assert found.indices.tolist() == expected.indices.tolist() and np.array_equal(found.scores, expected.scores)
    with pytest.raises(ValueError, match="held 100 vectors, not the 120 announced"):
        FaissIndex.from_chunks([(ids, keys)], 120)
    with pytest.raises(ValueError, match="unique and increasing"):
        FaissIndex.from_chunks([(ids[50:], keys[50:]), (ids[:50], keys[:50])], 100)


def on_a_new_thread(fn):
    """What ``fn`` gives when called on a thread of its own (OpenMP's thread count there starts at its default)."""
    import threading

    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def searched_with_threads(search) -> int:
    """The OpenMP thread count ``search`` leaves on a new thread, while this thread's count is 1."""
    import faiss  # a test requirement (requirements-dev.txt), as for the rest of this file

    here = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # this thread's count is not the searching thread's
    try:
        return on_a_new_thread(lambda: (search(), faiss.omp_get_max_threads())[1])
    finally:
        faiss.omp_set_num_threads(here)


@pytest.mark.parametrize("read_back", [False, True])
def test_a_search_on_another_thread_keeps_the_index_s_thread_count(read_back, tmp_path) -> None:
    """OpenMP's thread count belongs to the thread that set it: an index built (or read) with a count and searched on
    another thread (an LHA shard's helper) searched with OpenMP's default there until each search set its own."""
    import faiss  # a test requirement (requirements-dev.txt), as for the rest of this file

    wanted = on_a_new_thread(faiss.omp_get_max_threads) + 1  # not what a new thread has by default
    keys = normalise(np.random.default_rng(3).standard_normal((50, 8)).astype(np.float32))
    index = FaissIndex(keys, np.arange(50), threads=wanted)
    if read_back:
        index.write(str(tmp_path / "index.faiss"))
        index = FaissIndex.read(str(tmp_path / "index.faiss"), np.arange(50), threads=wanted)
    assert searched_with_threads(lambda: index.search(keys[:5], 3)) == wanted
