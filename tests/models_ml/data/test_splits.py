"""Sticky document-pair-level splits (models_ml.data.splits)."""

from __future__ import annotations

import pytest

from models_ml.data.splits import assign_splits


def test_three_pairs_give_one_pair_to_each_split() -> None:
    assert sorted(assign_splits([1, 2, 3], seed=0).values()) == ["dev", "test", "train"]


def test_splits_are_deterministic_for_a_seed_and_change_with_it() -> None:
    keys = list(range(40))
    first = assign_splits(keys, seed=7)
    assert first == assign_splits(list(reversed(keys)), seed=7)
    assert first != assign_splits(keys, seed=8)
    counts = {name: list(first.values()).count(name) for name in ("train", "dev", "test")}
    assert counts == {"train": 28, "dev": 6, "test": 6}


def test_earlier_pairs_keep_their_split_when_new_pairs_arrive() -> None:
    before = assign_splits(range(10), seed=3)
    after = assign_splits(range(30), seed=3, previous=before)
    assert all(after[key] == split for key, split in before.items())
    assert sorted(after) == list(range(30))


def test_a_zero_fraction_split_gets_nothing() -> None:
    split = assign_splits(range(10), seed=0, fractions={"train": 0.8, "dev": 0.2})
    assert set(split.values()) == {"train", "dev"}


@pytest.mark.parametrize(
    ("fractions", "message"),
    [({"train": 0.5, "dev": 0.2}, "sum to 1"), ({"train": 1.2, "dev": -0.2}, ">= 0"), ({"train": 0.9, "valid": 0.1}, "unknown split")],
)
def test_bad_fractions_are_refused(fractions: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        assign_splits(range(5), seed=0, fractions=fractions)
