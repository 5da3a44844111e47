"""Paragraph alignment (Algorithms 1-4 of Jiang et al. 2020) on hand-made similarity matrices."""

from __future__ import annotations

import numpy as np
import pytest

from models_ml.aligning.paragraphs import (
    NewselaParagraphConfig,
    ParagraphGroup,
    WikipediaParagraphConfig,
    align_paragraphs_newsela,
    align_paragraphs_wikipedia,
    merge_paragraph_alignment,
    paragraph_similarities,
    relative_position_distance,
    sentence_pair_mask,
)


def block_similarity(
    simple_par: list[int], complex_par: list[int], paragraph_sim: dict[tuple[int, int], float], low: float = 0.0
) -> np.ndarray:
    """A (m, n) sentence matrix whose first sentence pair of paragraphs (i, j) has the given value, others ``low``."""
    sim = np.full((len(simple_par), len(complex_par)), low)
    for (i, j), value in paragraph_sim.items():
        sim[simple_par.index(i), complex_par.index(j)] = value
    return sim


def test_paragraph_similarities_average_of_row_maxima_and_overall_maximum() -> None:
    simple_par = [0, 0, 1]
    complex_par = [0, 1, 1]
    sim = np.array(
        [
            [0.2, 0.9, 0.1],
            [0.4, 0.3, 0.5],
            [0.7, 0.0, 0.6],
        ]
    )
    avg_max, max_max = paragraph_similarities(sim, simple_par, complex_par)
    np.testing.assert_allclose(avg_max, [[0.3, 0.7], [0.7, 0.6]])
    np.testing.assert_allclose(max_max, [[0.4, 0.9], [0.7, 0.6]])


@pytest.mark.parametrize("seed", range(6))
def test_paragraph_similarities_equal_one_paragraph_pair_at_a_time_to_the_last_bit(seed: int) -> None:
    """Paragraphs of up to 300 sentences, in any order (means of 8 or more values are summed pairwise by numpy): the
    figures equal the mean and max of each paragraph pair's row maxima taken one pair at a time, exactly."""
    rng = np.random.default_rng(seed)
    k, l = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    simple_par = rng.permutation(np.concatenate([np.arange(k), rng.integers(0, k, size=int(rng.integers(0, 300)))]))
    complex_par = rng.permutation(np.concatenate([np.arange(l), rng.integers(0, l, size=int(rng.integers(0, 40)))]))
    sim = rng.random((simple_par.size, complex_par.size)) * 10.0 ** rng.integers(-3, 4)
    avg_max, max_max = paragraph_similarities(sim, simple_par, complex_par)
    for i in range(k):
        for j in range(l):
            best = sim[np.ix_(simple_par == i, complex_par == j)].max(axis=1)  # (|S_i|,)
            assert avg_max[i, j] == best.mean() and max_max[i, j] == best.max()


def test_relative_position_puts_first_paragraphs_at_distance_zero() -> None:
    distance = relative_position_distance(2, 4)
    assert distance.shape == (2, 4)
    assert distance[0, 0] == 0.0
    assert distance[1, 2] == 0.0  # 1/2 == 2/4
    assert distance[0, 3] == pytest.approx(0.75)


def test_newsela_aligns_each_simple_paragraph_with_its_best_nearby_complex_paragraph() -> None:
    simple_par = [0, 0, 1]
    complex_par = [0, 1, 1]
    sim = block_similarity(simple_par, complex_par, {(0, 0): 0.8, (1, 1): 0.7}, low=0.05)
    groups = align_paragraphs_newsela(sim, simple_par, complex_par)
    assert groups == [ParagraphGroup((0,), (0,)), ParagraphGroup((1,), (1,))]


def test_newsela_drops_best_paragraph_that_is_too_far_in_position() -> None:
    simple_par = [0, 1, 2]
    complex_par = [0, 1, 2]
    # simple 0's best complex paragraph is the last one: d = 2/3 >= tau2 = 0.34.
    sim = block_similarity(simple_par, complex_par, {(0, 2): 0.9, (1, 1): 0.9, (2, 2): 0.9}, low=0.05)
    groups = align_paragraphs_newsela(sim, simple_par, complex_par)
    assert groups == [ParagraphGroup((1,), (1,)), ParagraphGroup((2,), (2,))]


def test_newsela_very_high_max_similarity_aligns_regardless_of_position() -> None:
    simple_par = [0, 1, 2]
    complex_par = [0, 1, 2]
    sim = block_similarity(simple_par, complex_par, {(0, 2): 0.99999, (1, 1): 0.9, (2, 2): 0.9}, low=0.05)
    groups = align_paragraphs_newsela(sim, simple_par, complex_par)
    # simple 0 reaches complex 2 by the tau3 rule; simple 2 shares it, so the groups merge.
    assert groups == [ParagraphGroup((0, 2), (2,)), ParagraphGroup((1,), (1,))]


def test_newsela_merges_two_neighbouring_complex_paragraphs_of_a_split() -> None:
    simple_par = [0, 0, 1]
    complex_par = [0, 1, 2, 2]
    # Both complex 0 and 1 clear tau4 (but not tau3) with simple 0: a paragraph split.
    sim = block_similarity(simple_par, complex_par, {(0, 0): 0.9995, (0, 1): 0.9993, (1, 2): 0.8}, low=0.05)
    groups = align_paragraphs_newsela(sim, simple_par, complex_par)
    assert groups == [ParagraphGroup((0,), (0, 1)), ParagraphGroup((1,), (2,))]


def test_newsela_without_split_rule_keeps_only_the_best_paragraph() -> None:
    simple_par = [0, 0, 1]
    complex_par = [0, 1, 2, 2]
    sim = block_similarity(simple_par, complex_par, {(0, 0): 0.9995, (0, 1): 0.9993, (1, 2): 0.8}, low=0.05)
    strict = NewselaParagraphConfig(tau4=0.99999)
    groups = align_paragraphs_newsela(sim, simple_par, complex_par, strict)
    assert groups == [ParagraphGroup((0,), (0,)), ParagraphGroup((1,), (2,))]


@pytest.mark.parametrize("align", [align_paragraphs_newsela, align_paragraphs_wikipedia])
def test_document_without_paragraph_breaks_is_one_group_whatever_the_thresholds(align) -> None:
    sim = np.zeros((3, 4))  # nothing would clear any threshold
    groups = align(sim, [0, 0, 0], [0, 0, 0, 0])
    assert groups == [ParagraphGroup((0,), (0,))]


def test_wikipedia_aligns_candidates_above_threshold_and_close_in_position() -> None:
    simple_par = [0, 1, 2]
    complex_par = [0, 1, 2]
    sim = block_similarity(simple_par, complex_par, {(0, 0): 0.995, (1, 1): 0.995, (2, 2): 0.995}, low=0.5)
    groups = align_paragraphs_wikipedia(sim, simple_par, complex_par)
    assert groups == [ParagraphGroup((0,), (0,)), ParagraphGroup((1,), (1,)), ParagraphGroup((2,), (2,))]


def test_wikipedia_widely_spread_candidates_keep_the_closest_and_the_very_similar() -> None:
    simple_par = [0, 1]
    complex_par = list(range(12))
    # simple 0 has candidates 0 and 7: range 7 > tau4 = 5 and 7/12 > tau3 = 0.5, so suspicious.
    weak = block_similarity(simple_par, complex_par, {(0, 0): 0.995, (0, 7): 0.993, (1, 9): 0.995}, low=0.5)
    assert align_paragraphs_wikipedia(weak, simple_par, complex_par) == [
        ParagraphGroup((0,), (0,)),
        ParagraphGroup((1,), (9,)),
    ]
    strong = block_similarity(simple_par, complex_par, {(0, 0): 0.995, (0, 7): 0.999, (1, 9): 0.995}, low=0.5)
    assert align_paragraphs_wikipedia(strong, simple_par, complex_par) == [
        ParagraphGroup((0,), (0,)),
        ParagraphGroup((0,), (7,)),
        ParagraphGroup((1,), (9,)),
    ]


def test_wikipedia_merges_neighbouring_complex_candidates() -> None:
    simple_par = [0, 1]
    complex_par = [0, 1, 2]
    sim = block_similarity(simple_par, complex_par, {(0, 0): 0.995, (0, 1): 0.993, (1, 2): 0.995}, low=0.5)
    groups = align_paragraphs_wikipedia(sim, simple_par, complex_par, WikipediaParagraphConfig())
    assert groups == [ParagraphGroup((0,), (0, 1)), ParagraphGroup((1,), (2,))]


def test_merge_splits_non_adjacent_complex_paragraphs_and_joins_shared_ones() -> None:
    align = np.array(
        [
            [1, 1, 0, 1, 0],
            [0, 0, 0, 1, 1],
            [0, 0, 0, 0, 0],
        ],
        dtype=bool,
    )
    groups = merge_paragraph_alignment(align)
    assert groups == [ParagraphGroup((0,), (0, 1)), ParagraphGroup((0, 1), (3, 4))]
    simple, complex_ = groups[0]  # groups unpack as (simple, complex)
    assert (simple, complex_) == ((0,), (0, 1))


def test_sentence_pair_mask_marks_only_pairs_inside_aligned_groups() -> None:
    simple_par = [0, 0, 1]
    complex_par = [0, 1, 1, 2]
    mask = sentence_pair_mask([ParagraphGroup((0,), (0, 1)), ((1,), (2,))], simple_par, complex_par)
    expected = np.array(
        [
            [True, True, True, False],
            [True, True, True, False],
            [False, False, False, True],
        ]
    )
    assert mask.dtype == bool
    np.testing.assert_array_equal(mask, expected)


def test_shape_mismatch_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"expected \(2, 3\)"):
        align_paragraphs_newsela(np.zeros((3, 3)), [0, 1], [0, 1, 2])


def test_paragraph_numbers_with_gaps_raise_value_error() -> None:
    with pytest.raises(ValueError, match="simple paragraph 1 has no sentences"):
        align_paragraphs_wikipedia(np.zeros((2, 2)), [0, 2], [0, 1])


def test_nan_similarity_raises_value_error() -> None:
    with pytest.raises(ValueError, match="NaN"):
        align_paragraphs_newsela(np.array([[np.nan, 0.1], [0.1, 0.2]]), [0, 1], [0, 1])


def test_empty_document_gives_no_groups() -> None:
    assert align_paragraphs_newsela(np.zeros((0, 2)), [], [0, 1]) == []
