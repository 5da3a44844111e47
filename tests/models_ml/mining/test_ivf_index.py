"""The IVF-SQ8 index written and read back searches as the one built (a job stores it once for all its workers)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models_ml.mining.ivf_index import IvfIndex
from models_ml.mining.knn import normalise


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
