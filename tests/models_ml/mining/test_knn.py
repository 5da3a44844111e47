"""Exact cosine kNN in bounded memory (models_ml.mining.knn)."""

from __future__ import annotations

import numpy as np
import pytest

from models_ml.mining.knn import normalise, top_k


def test_chunked_search_equals_the_full_matrix() -> None:
    rng = np.random.default_rng(0)
    queries, keys = normalise(rng.normal(size=(300, 12))), normalise(rng.normal(size=(2000, 12)))
    found = top_k(queries, keys, 5, query_chunk=37, key_chunk=101)
    expected = np.argsort(-(queries @ keys.T), axis=1, kind="stable")[:, :5]
    assert (found.indices == expected).all()
    assert np.allclose(found.scores, np.take_along_axis(queries @ keys.T, expected, axis=1), atol=1e-6)


def test_exclude_self_never_returns_the_query() -> None:
    vectors = normalise(np.random.default_rng(1).normal(size=(50, 4)))
    found = top_k(vectors, vectors, 3, exclude_self=True, key_chunk=7)
    assert not (found.indices == np.arange(50)[:, None]).any()


def test_fewer_keys_than_k_pad_with_minus_one() -> None:
    found = top_k(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32), 3)
    assert found.indices.tolist() == [[0, 1, -1], [1, 0, -1]]


def test_bad_shapes_and_k_are_refused() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        top_k(np.eye(2), np.eye(2), 0)
    with pytest.raises(ValueError, match="same dimension"):
        top_k(np.eye(2), np.eye(3), 1)
