"""The IVF-SQ8 index written and read back searches as the one built (a job stores it once for all its workers)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models_ml.mining.ivf_index import IvfIndex
from models_ml.mining.knn import normalise
from tests.models_ml.mining.test_vector_index import on_a_new_thread, searched_with_threads


@pytest.mark.parametrize("dimensions", [32, 600])  # 600: PCA to 512 first, stored with the index
def test_an_index_written_and_read_back_searches_identically_with_its_settings(tmp_path, dimensions) -> None:
    vectors = normalise(np.random.default_rng(dimensions).standard_normal((800, dimensions)).astype(np.float32))
    ids = np.arange(800) * 3 + 7  # the caller's ids live inside the index
    built = IvfIndex(vectors, len(vectors), cells=8, nprobe=2)
    built.add(vectors, ids)
    built.write(str(tmp_path / "ivf.faiss"))
    read = IvfIndex.read(str(tmp_path / "ivf.faiss"), built.settings)
    assert read.settings == built.settings and read.size == 800 and read.settings.pca == (512 if dimensions > 512 else 0)
    keys = dict(zip(ids.tolist(), vectors))

    def lookup(wanted: np.ndarray) -> np.ndarray:
        return np.stack([keys[int(i)] for i in wanted])

    expected, found = built.search(vectors[:50], 5, lookup, exclude=ids[:50]), read.search(vectors[:50], 5, lookup, exclude=ids[:50])
    assert found.indices.tolist() == expected.indices.tolist() and np.array_equal(found.scores, expected.scores)
    assert read.candidates(vectors[:5], 3).tolist() == built.candidates(vectors[:5], 3).tolist()  # nprobe 2 as recorded
    with pytest.raises(ValueError, match="has 8 cells; its settings say 16"):
        IvfIndex.read(str(tmp_path / "ivf.faiss"), dataclasses.replace(built.settings, cells=16))


def test_a_search_on_another_thread_keeps_the_index_s_thread_count(tmp_path) -> None:
    """As FaissIndex's: the count set at the build (or read) is set again by each search, on the searching thread."""
    import faiss  # a test requirement (requirements-dev.txt), as for the rest of this file

    wanted = on_a_new_thread(faiss.omp_get_max_threads) + 1
    vectors = normalise(np.random.default_rng(5).standard_normal((200, 16)).astype(np.float32))
    built = IvfIndex(vectors, len(vectors), cells=4, nprobe=4, threads=wanted)
    built.add(vectors, np.arange(200))
    built.write(str(tmp_path / "ivf.faiss"))
    for index in (built, IvfIndex.read(str(tmp_path / "ivf.faiss"), built.settings, threads=wanted)):
        assert searched_with_threads(lambda index=index: index.candidates(vectors[:5], 3)) == wanted
