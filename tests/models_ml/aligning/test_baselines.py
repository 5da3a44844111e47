"""Gale & Church length-based alignment and the similarity arg-max baseline."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from models_ml.aligning.baselines import GALE_CHURCH_BEADS, _length_penalty, argmax_baseline, gale_church_align
from models_ml.data.io import AlignmentGroup


def _sentences(lengths: list[int]) -> list[str]:
    """Gale & Church only sees character counts, so sentences of x's of the given lengths will do."""
    return ["x" * length for length in lengths]


def _pairs(groups: list[AlignmentGroup]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(group.complex, group.simple) for group in groups]


def test_gale_church_recovers_splits_merges_and_a_deletion() -> None:
    # Simple side is about 0.8 times as long as the complex side; the 12-character complex
    # sentence 5 (a photo caption, say) is dropped between two 3:1 merges.
    complex_sentences = _sentences([100, 200, 120, 40, 40, 12, 50, 80, 70, 60, 90, 120])
    simple_sentences = _sentences([80, 70, 90, 160, 160, 120, 96])
    groups = gale_church_align(complex_sentences, simple_sentences)
    assert _pairs(groups) == [
        ((0,), (0,)),
        ((1,), (1, 2)),  # 1:2 split
        ((2, 3, 4), (3,)),  # 3:1 merge
        ((6, 7, 8), (4,)),  # 3:1 merge; complex 5 is in no group
        ((9, 10), (5,)),  # 2:1 merge
        ((11,), (6,)),
    ]
    assert all(group.label == "aligned" and group.score is None for group in groups)


def test_gale_church_absorbs_a_lone_deletion_into_a_merge() -> None:
    # With Gale & Church's priors a 2:1 bead (0.089) beats a 1:0 (0.0099) and also has the
    # smaller length penalty, so a dropped sentence next to a free neighbour is merged into it.
    groups = gale_church_align(_sentences([100, 40, 120]), _sentences([80, 96]))
    assert _pairs(groups) == [((0,), (0,)), ((1, 2), (1,))]


def test_gale_church_uses_the_1_3_bead_for_a_three_way_split() -> None:
    complex_sentences, simple_sentences = _sentences([100, 240, 120]), _sentences([80, 60, 70, 62, 96])
    assert _pairs(gale_church_align(complex_sentences, simple_sentences)) == [
        ((0,), (0,)),
        ((1,), (1, 2, 3)),
        ((2,), (4,)),
    ]
    without_1_3 = {bead: prior for bead, prior in GALE_CHURCH_BEADS.items() if bead != (1, 3)}
    assert ((1,), (1, 2, 3)) not in _pairs(gale_church_align(complex_sentences, simple_sentences, beads=without_1_3))


def _brute_force_cost(complex_lengths: list[int], simple_lengths: list[int], c: float) -> float:
    """Cheapest total cost over every bead sequence, by enumeration (tiny inputs only)."""
    beads = [(a, b, -math.log(prior)) for (a, b), prior in GALE_CHURCH_BEADS.items()]

    def best(i: int, j: int) -> float:
        if i == len(complex_lengths) and j == len(simple_lengths):
            return 0.0
        options = [math.inf]
        for a, b, prior_cost in beads:
            if i + a <= len(complex_lengths) and j + b <= len(simple_lengths):
                chars = (sum(complex_lengths[i : i + a]), sum(simple_lengths[j : j + b]))
                options.append(prior_cost + float(_length_penalty(*chars, c, 6.8)) + best(i + a, j + b))
        return min(options)

    return best(0, 0)


def _path_cost(groups: list[AlignmentGroup], complex_lengths: list[int], simple_lengths: list[int], c: float) -> float:
    """Cost of the returned alignment, counting every unplaced sentence as a 1:0 or 0:1 bead."""
    total = 0.0
    for group in groups:
        chars = (sum(complex_lengths[i] for i in group.complex), sum(simple_lengths[j] for j in group.simple))
        total += -math.log(GALE_CHURCH_BEADS[(len(group.complex), len(group.simple))])
        total += float(_length_penalty(*chars, c, 6.8))
    placed_complex = {i for group in groups for i in group.complex}
    placed_simple = {j for group in groups for j in group.simple}
    for lengths, placed, bead in ((complex_lengths, placed_complex, (1, 0)), (simple_lengths, placed_simple, (0, 1))):
        for index, length in enumerate(lengths):
            if index not in placed:
                chars = (length, 0) if bead == (1, 0) else (0, length)
                total += -math.log(GALE_CHURCH_BEADS[bead]) + float(_length_penalty(*chars, c, 6.8))
    return total


def test_gale_church_finds_the_cheapest_path_and_is_monotone() -> None:
    rng = random.Random(7)
    for _ in range(25):
        complex_lengths = [rng.randint(5, 150) for _ in range(rng.randint(1, 5))]
        simple_lengths = [rng.randint(5, 150) for _ in range(rng.randint(1, 5))]
        c = sum(simple_lengths) / sum(complex_lengths)
        groups = gale_church_align(_sentences(complex_lengths), _sentences(simple_lengths))
        assert _path_cost(groups, complex_lengths, simple_lengths, c) == pytest.approx(
            _brute_force_cost(complex_lengths, simple_lengths, c)
        )
        for earlier, later in itertools.pairwise(groups):
            assert earlier.complex[-1] < later.complex[0] and earlier.simple[-1] < later.simple[0]


def test_gale_church_empty_input_gives_no_groups() -> None:
    assert gale_church_align([], []) == []
    assert gale_church_align(["A sentence."], []) == []
    assert gale_church_align([], ["A sentence."]) == []


def test_gale_church_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        gale_church_align(["fine", 3], ["fine"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="c must be a positive number"):
        gale_church_align(["a"], ["b"], c=0.0)
    with pytest.raises(ValueError, match="priors must lie in"):
        gale_church_align(["a"], ["b"], beads={(1, 1): 0.0})
    with pytest.raises(ValueError, match="cannot align 2 complex with 1 simple"):
        gale_church_align(["a", "b"], ["c"], beads={(1, 1): 0.9})


SIMILARITY = np.array(
    [  # 4 simple x 3 complex
        [0.9, 0.1, 0.0],
        [0.7, 0.2, 0.1],
        [0.1, 0.3, 0.4],  # best is below 0.5
        [0.0, 0.6, 0.55],
    ]
)


def test_argmax_links_each_simple_sentence_to_its_best_complex_sentence_above_threshold() -> None:
    groups = argmax_baseline(SIMILARITY, 0.5)
    assert _pairs(groups) == [((0,), (0, 1)), ((1,), (3,))]
    assert [group.score for group in groups] == pytest.approx([0.8, 0.6])
    assert all(group.label == "aligned" for group in groups)
    assert _pairs(argmax_baseline(SIMILARITY, 0.6)) == [((0,), (0, 1)), ((1,), (3,))]  # >= keeps 0.6
    assert _pairs(argmax_baseline(SIMILARITY, 0.61)) == [((0,), (0, 1))]
    assert _pairs(argmax_baseline(SIMILARITY, 0.3)) == [((0,), (0, 1)), ((1,), (3,)), ((2,), (2,))]


def test_argmax_on_an_empty_matrix_gives_no_groups() -> None:
    assert argmax_baseline(np.zeros((0, 3)), 0.5) == []
    assert argmax_baseline(np.zeros((2, 0)), 0.5) == []


def test_argmax_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D"):
        argmax_baseline(np.array([0.9, 0.1]), 0.5)
    with pytest.raises(ValueError, match="NaN"):
        argmax_baseline(np.array([[np.nan, 0.1]]), 0.5)
    with pytest.raises(ValueError, match="threshold"):
        argmax_baseline(SIMILARITY, math.nan)
