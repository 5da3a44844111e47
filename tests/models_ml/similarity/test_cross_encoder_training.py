"""Cross-encoder training examples from gold groups (models_ml.similarity.cross_encoder_training)."""

from __future__ import annotations

import pytest

from models_ml.data.io import AlignmentGroup
from models_ml.similarity.cross_encoder_training import pair_examples_from_groups


def test_examples_from_groups_label_every_pair_of_a_group_and_sample_negatives_outside_them() -> None:
    simple = [f"s{j}" for j in range(4)]
    complex_sentences = [f"c{i}" for i in range(5)]
    groups = [AlignmentGroup(complex=(0, 1), simple=(0,), label="aligned"), AlignmentGroup((3,), (2,), "partial")]
    examples = pair_examples_from_groups(simple, complex_sentences, groups, negatives_per_positive=2, seed=0)
    positives = [e for e in examples if e[2] != "not_aligned"]
    negatives = [e for e in examples if e[2] == "not_aligned"]
    assert positives == [("s0", "c0", "aligned"), ("s0", "c1", "aligned"), ("s2", "c3", "partial")]
    assert len(negatives) == 6 and len(set(negatives)) == 6
    assert not {(s, c) for s, c, _ in negatives} & {(s, c) for s, c, _ in positives}
    again = pair_examples_from_groups(simple, complex_sentences, groups, negatives_per_positive=2, seed=0)
    assert again == examples


def test_examples_from_groups_take_all_negatives_when_too_few_exist() -> None:
    groups = [AlignmentGroup((0,), (0,), "aligned")]
    examples = pair_examples_from_groups(["a", "b"], ["x", "y"], groups, negatives_per_positive=10, seed=1)
    assert sorted(e[:2] for e in examples if e[2] == "not_aligned") == [("a", "y"), ("b", "x"), ("b", "y")]


def test_examples_from_groups_reject_a_group_outside_the_document() -> None:
    with pytest.raises(ValueError, match="out of range"):
        pair_examples_from_groups(["a"], ["x"], [AlignmentGroup((3,), (0,))], negatives_per_positive=1, seed=0)
