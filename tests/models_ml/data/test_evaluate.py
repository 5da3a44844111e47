"""Task 1 / Task 2 evaluation at sentence-pair and group level, micro-averaging and threshold sweeps."""

from __future__ import annotations

import numpy as np
import pytest

from models_ml.data.evaluate import (
    PRF,
    SHAPES,
    EvaluationReport,
    evaluate_corpus,
    evaluate_pairs,
    format_report,
    format_shape_table,
    group_shape,
    pair_labels_from_groups,
    shape_table,
    threshold_sweep,
)
from models_ml.data.io import AlignmentGroup

# Four simple and four complex sentences.
GOLD = [
    AlignmentGroup(complex=(0,), simple=(0, 1), label="aligned"),  # a split
    AlignmentGroup(complex=(1, 2), simple=(2,), label="partial"),  # a merge, partially aligned
    AlignmentGroup(complex=(3,), simple=(3,), label="aligned"),
]
PREDICTED = [
    AlignmentGroup(complex=(0,), simple=(0, 1), label="aligned"),  # exact match of the split
    AlignmentGroup(complex=(1,), simple=(2,), label="aligned"),  # half of the merge, wrong label
    AlignmentGroup(complex=(3,), simple=(2,), label="partial"),  # wrong
]


def test_groups_expand_to_every_simple_complex_pair() -> None:
    labels = pair_labels_from_groups([AlignmentGroup(complex=(1, 2), simple=(0, 3), label="partial")], 4, 3)
    assert labels == {(0, 1): "partial", (0, 2): "partial", (3, 1): "partial", (3, 2): "partial"}


def test_pair_in_two_groups_keeps_the_stronger_label() -> None:
    groups = [
        AlignmentGroup(complex=(0,), simple=(0,), label="partial"),
        AlignmentGroup(complex=(0, 1), simple=(0,), label="aligned"),
    ]
    assert pair_labels_from_groups(groups, 1, 2) == {(0, 0): "aligned", (0, 1): "aligned"}


def test_group_outside_the_document_raises_value_error() -> None:
    with pytest.raises(ValueError, match="out of range for 2 simple and 2 complex"):
        pair_labels_from_groups([AlignmentGroup(complex=(2,), simple=(0,))], 2, 2)


def test_sentence_level_counts_for_both_tasks() -> None:
    report = evaluate_pairs(GOLD, PREDICTED, 4, 4)
    # Gold pairs (simple, complex): (0,0)a (1,0)a (2,1)p (2,2)p (3,3)a; predicted: (0,0)a (1,0)a (2,1)a (2,3)p.
    assert report.sentence_task1 == PRF(tp=3, fp=1, fn=2)
    assert report.sentence_task1.precision == pytest.approx(0.75)
    assert report.sentence_task1.recall == pytest.approx(0.6)
    assert report.sentence_task1.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert report.sentence_task2 == PRF(tp=2, fp=1, fn=1)


def test_group_level_needs_exact_sets_and_task2_only_counts_aligned_groups() -> None:
    report = evaluate_pairs(GOLD, PREDICTED, 4, 4)
    assert report.group_task1 == PRF(tp=1, fp=2, fn=2)
    assert report.group_task2 == PRF(tp=1, fp=1, fn=1)


def test_group_level_task1_ignores_the_label() -> None:
    relabelled = [AlignmentGroup(complex=g.complex, simple=g.simple, label="partial") for g in GOLD]
    report = evaluate_pairs(GOLD, relabelled, 4, 4)
    assert report.group_task1 == PRF(tp=3, fp=0, fn=0)
    assert report.group_task2 == PRF(tp=0, fp=0, fn=2)


def test_perfect_prediction_scores_one_everywhere() -> None:
    report = evaluate_pairs(GOLD, list(GOLD), 4, 4)
    for prf in (report.sentence_task1, report.sentence_task2, report.group_task1, report.group_task2):
        assert (prf.precision, prf.recall, prf.f1) == (1.0, 1.0, 1.0)


def test_empty_prediction_scores_zero_without_dividing_by_zero() -> None:
    report = evaluate_pairs(GOLD, [], 4, 4)
    assert report.sentence_task1 == PRF(tp=0, fp=0, fn=5)
    for prf in (report.sentence_task1, report.sentence_task2, report.group_task1, report.group_task2):
        assert (prf.precision, prf.recall, prf.f1) == (0.0, 0.0, 0.0)
    nothing = evaluate_pairs([], [], 4, 4)
    assert nothing.group_task1.f1 == 0.0


def test_identical_gold_groups_can_be_left_out() -> None:
    gold = [
        AlignmentGroup(complex=(0,), simple=(0,), label="aligned", identical=True),
        AlignmentGroup(complex=(1,), simple=(1,), label="aligned"),
    ]
    predicted = [AlignmentGroup(complex=(0,), simple=(0,)), AlignmentGroup(complex=(1,), simple=(2,))]
    with_identical = evaluate_pairs(gold, predicted, 3, 2)
    without_identical = evaluate_pairs(gold, predicted, 3, 2, exclude_identical=True)
    assert with_identical.sentence_task1 == PRF(tp=1, fp=1, fn=1)
    assert without_identical.sentence_task1 == PRF(tp=0, fp=1, fn=1)
    assert without_identical.group_task1 == PRF(tp=0, fp=1, fn=1)


def test_corpus_figures_are_micro_averaged_over_documents() -> None:
    one_hit = ([AlignmentGroup(complex=(0,), simple=(0,))], [AlignmentGroup(complex=(0,), simple=(0,))], 1, 1)
    misses = (
        [AlignmentGroup(complex=(i,), simple=(i,)) for i in range(3)],
        [AlignmentGroup(complex=(i,), simple=((i + 1) % 3,)) for i in range(3)],
        3,
        3,
    )
    report = evaluate_corpus([one_hit, misses])
    assert report.documents == 2
    assert report.sentence_task1 == PRF(tp=1, fp=3, fn=3)
    assert report.sentence_task1.precision == pytest.approx(0.25)  # a macro average would give 0.5


def test_corpus_without_documents_raises_value_error() -> None:
    with pytest.raises(ValueError, match="at least one document pair"):
        evaluate_corpus([])


def test_threshold_sweep_finds_the_threshold_that_separates_the_classes() -> None:
    scores = [np.array([[0.9, 0.2], [0.1, 0.7]]), np.array([[0.6, 0.8]])]
    gold = [{(0, 0): "aligned", (1, 1): "partial"}, {(0, 1): "aligned"}]
    task1 = threshold_sweep(scores, gold, task=1)
    assert task1.threshold == pytest.approx(0.7)
    assert task1.metrics == PRF(tp=3, fp=0, fn=0)
    assert [t for t, _ in task1.curve] == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.2, 0.1])
    task2 = threshold_sweep(scores, gold, task=2)  # the partial pair at 0.7 is now a negative
    assert task2.threshold == pytest.approx(0.8)
    assert task2.metrics == PRF(tp=2, fp=0, fn=0)


def test_threshold_sweep_rejects_unknown_task_and_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="task must be 1 or 2"):
        threshold_sweep([np.zeros((1, 1))], [{}], task=3)
    with pytest.raises(ValueError, match="outside"):
        threshold_sweep([np.zeros((1, 1))], [{(1, 0): "aligned"}], task=1)


def test_format_report_lists_both_tasks_at_both_levels() -> None:
    text = format_report(evaluate_pairs(GOLD, PREDICTED, 4, 4))
    lines = text.splitlines()
    assert lines[0] == "1 document pair(s)"
    assert lines[3].split() == ["sentence", "1", "0.7500", "0.6000", "0.6667", "3", "1", "2"]
    assert lines[6].split()[:2] == ["group", "2"]


def test_report_as_dict_carries_counts_and_scores() -> None:
    data = EvaluationReport(PRF(1, 0, 1), PRF(0, 0, 0), PRF(1, 1, 0), PRF(0, 1, 0)).as_dict()
    assert data["sentence"]["task1"] == {"tp": 1, "fp": 0, "fn": 1, "precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}


def test_group_shape_counts_complex_then_simple_sentences() -> None:
    shapes = [
        group_shape(AlignmentGroup(complex=c, simple=s))
        for c, s in [((0,), (0,)), ((0,), (0, 1)), ((0,), (0, 1, 2, 3)), ((0, 1), (0,)), ((0, 1), (0, 1))]
    ]
    assert shapes == ["1:1", "1:2", "1:3+", "n:1", "n:m"]
    assert set(shapes) == set(SHAPES)


def test_shape_table_counts_exact_matches_per_gold_shape_over_documents() -> None:
    second_gold = [AlignmentGroup(complex=(0,), simple=(0, 1, 2)), AlignmentGroup(complex=(1,), simple=(3,))]
    second_predicted = [AlignmentGroup(complex=(0,), simple=(0, 1, 2), label="partial")]  # label is ignored
    table = shape_table([(GOLD, PREDICTED), (second_gold, second_predicted)])
    assert table == {"1:1": (2, 0), "1:2": (1, 1), "1:3+": (1, 1), "n:1": (1, 0), "n:m": (0, 0)}
    assert list(table) == list(SHAPES)


def test_format_shape_table_lists_every_shape_and_the_total() -> None:
    table = {"1:1": (4, 3), "1:2": (2, 1), "1:3+": (0, 0), "n:1": (1, 0), "n:m": (0, 0)}
    lines = format_shape_table(table).splitlines()
    assert lines[2].split() == ["1:1", "4", "3", "0.7500"]
    assert lines[4].split() == ["1:3+", "0", "0", "-"]
    assert lines[-1].split() == ["all", "7", "4", "0.5714"]
