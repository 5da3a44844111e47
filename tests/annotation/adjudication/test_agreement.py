"""Agreement measures checked against published and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score
from statsmodels.stats.inter_rater import fleiss_kappa

from annotation.adjudication.agreement import (
    LABELS,
    PRF_ALL,
    SCOPE_ALL_PAIRS,
    SCOPE_SHOWN,
    UNDEFINED_ONE_LABEL,
    _fleiss_kappa,
    _krippendorff_alpha,
    agreement_report,
    aligner_alignment_prf,
    alignment_prf,
    expand_to_all_pairs,
    pairwise_alignment_prf,
    prf_from_confusion,
)

A, P, N = "aligned", "partial", "not_aligned"

# Fleiss (1971) as reproduced on Wikipedia "Fleiss' kappa": 10 subjects,
# 14 raters, 5 categories; each row counts the raters per category. kappa = 0.210.
FLEISS_1971_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C:
# 4 observers, 12 units, values 1..5, None = missing. Nominal alpha = 0.743.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


@pytest.fixture
def three_annotators() -> dict[str, dict[tuple[int, int], str]]:
    """Three annotators over five candidate pairs; Eve skipped item 5 and Dan rated item 6 alone.

    Items 1-4 are rated by all three, item 5 by two, item 6 by one.
    """
    return {
        "ann": {(1, 1): A, (2, 2): A, (3, 3): N, (4, 4): P, (5, 5): A, (6, 6): N},
        "bob": {(1, 1): A, (2, 2): A, (3, 3): N, (4, 4): N, (5, 5): P},
        "eve": {(1, 1): A, (2, 2): P, (3, 3): N, (4, 4): N},
    }


def test_statsmodels_fleiss_kappa_matches_fleiss_1971() -> None:
    assert fleiss_kappa(np.array(FLEISS_1971_TABLE), method="fleiss") == pytest.approx(0.210, abs=5e-4)


def test_fleiss_helper_matches_fleiss_1971_from_individual_ratings() -> None:
    """Expand the count table back into one label per rater, then run our code path."""
    categories = ("c1", "c2", "c3", "c4", "c5")
    rows = [[category for category, count in zip(categories, counts) for _ in range(count)] for counts in FLEISS_1971_TABLE]
    value, reason = _fleiss_kappa(rows, categories)
    assert reason is None
    assert value == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_helper_matches_krippendorff_2011_with_missing_values() -> None:
    units_by_rater = [KRIPPENDORFF_2011[name] for name in "ABCD"]
    value, reason = _krippendorff_alpha(units_by_rater, (1, 2, 3, 4, 5))
    assert reason is None
    assert value == pytest.approx(0.743, abs=5e-4)


def test_report_fleiss_on_hand_computed_three_label_example(three_annotators) -> None:
    """Fleiss uses items 1-4 (rated by all three); counts per item (A, P, N):

    (3,0,0), (2,1,0), (0,0,3), (0,1,2). P_i = (sum n_ij^2 - 3) / 6 = 1, 1/3, 1, 1/3,
    so P_bar = 2/3. p_j = 5/12, 2/12, 5/12, so P_e = 54/144 = 3/8.
    kappa = (2/3 - 3/8) / (1 - 3/8) = 7/15.
    """
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    assert report.fleiss_items == 4
    assert report.fleiss == pytest.approx(7 / 15)
    assert report.fleiss_undefined is None


def test_report_krippendorff_on_hand_computed_example_with_missing_rating(three_annotators) -> None:
    """Pairable units are items 1-5 (item 6 has one rating and is dropped), n.. = 14 values.

    Mismatching ordered pairs / (m_u - 1): item 2: (9-5)/2 = 2, item 4: 2, item 5: (4-2)/1 = 2,
    so D_o = 6/14 = 3/7. Value totals A=6, P=3, N=5: D_e = (196 - 70) / (14 * 13) = 9/13.
    alpha = 1 - (3/7) / (9/13) = 8/21.
    """
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    assert report.items == 5
    assert report.krippendorff_alpha == pytest.approx(8 / 21)


def test_report_cohen_per_pair_over_common_items(three_annotators) -> None:
    """ann/eve over items 1-4: p_o = 2/4; marginals ann (.5,.25,.25), eve (.25,.25,.5),
    p_e = .125 + .0625 + .125 = .3125, kappa = .1875 / .6875 = 3/11.
    ann/bob over items 1-5: p_o = 3/5; ann (3,1,1)/5, bob (2,1,2)/5, p_e = (6+1+2)/25 = 9/25,
    kappa = (15/25 - 9/25) / (16/25) = 3/8.
    """
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    assert report.cohen_items[("ann", "eve")] == 4
    assert report.cohen[("ann", "eve")] == pytest.approx(3 / 11)
    assert report.cohen_items[("ann", "bob")] == 5
    assert report.cohen[("ann", "bob")] == pytest.approx(3 / 8)
    assert report.cohen_undefined == {}


def test_cohen_matches_wikipedia_two_by_two_example() -> None:
    """Wikipedia "Cohen's kappa": 50 items; yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    p_o = 0.7, p_e = .5*.6 + .5*.4 = 0.5, kappa = 0.4.
    """
    pairs = [(A, A)] * 20 + [(A, N)] * 5 + [(N, A)] * 10 + [(N, N)] * 15
    ratings = {
        "first": {item: a for item, (a, _) in enumerate(pairs)},
        "second": {item: b for item, (_, b) in enumerate(pairs)},
    }
    report = agreement_report(ratings, scope=SCOPE_SHOWN)
    assert report.cohen[("first", "second")] == pytest.approx(0.4)
    assert report.confusion("first", "second") == [[20, 0, 5], [0, 0, 0], [10, 0, 15]]


def test_confusion_rows_are_first_annotator_in_either_order(three_annotators) -> None:
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    # ann vs eve: item1 A/A, item2 A/P, item3 N/N, item4 P/N.
    assert report.confusion("ann", "eve") == [[1, 1, 0], [0, 0, 1], [0, 0, 1]]
    assert report.confusion("eve", "ann") == [[1, 0, 0], [1, 0, 0], [0, 1, 1]]
    with pytest.raises(ValueError, match="'ann' and 'zoe'"):
        report.confusion("ann", "zoe")


def test_label_counts_cover_every_label(three_annotators) -> None:
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    assert report.label_counts["eve"] == {A: 1, P: 1, N: 2}
    assert report.label_counts["ann"] == {A: 3, P: 1, N: 2}


def test_all_pairs_scope_inflates_agreement() -> None:
    """Two annotators disagree a lot on 10 shown candidates; 490 unshown pairs are trivially not aligned."""
    shown = {
        "ann": {0: A, 1: A, 2: A, 3: P, 4: P, 5: N, 6: N, 7: A, 8: P, 9: N},
        "bob": {0: A, 1: N, 2: P, 3: P, 4: N, 5: A, 6: N, 7: N, 8: A, 9: P},
    }
    shown_report = agreement_report(shown, scope=SCOPE_SHOWN)
    all_report = agreement_report(expand_to_all_pairs(shown, range(500)), scope=SCOPE_ALL_PAIRS)
    assert shown_report.scope == "shown candidates"
    assert all_report.scope == "all sentence pairs"
    assert all_report.items == 500
    assert shown_report.cohen[("ann", "bob")] < 0.1
    assert all_report.cohen[("ann", "bob")] > shown_report.cohen[("ann", "bob")] + 0.3
    assert all_report.fleiss > shown_report.fleiss + 0.3
    assert all_report.krippendorff_alpha > shown_report.krippendorff_alpha + 0.3


def test_expand_to_all_pairs_keeps_labels_and_fills_not_aligned() -> None:
    expanded = expand_to_all_pairs({"ann": {"x": A}, "idle": {}}, ["x", "y", "z"])
    assert expanded == {"ann": {"x": A, "y": N, "z": N}, "idle": {"x": N, "y": N, "z": N}}


def test_expand_to_all_pairs_rejects_item_outside_universe() -> None:
    with pytest.raises(ValueError, match=r"annotator 'ann' rated item 'w'"):
        expand_to_all_pairs({"ann": {"w": A}}, ["x"])


def test_expand_to_all_pairs_rejects_unknown_default() -> None:
    with pytest.raises(ValueError, match="default label 'no'"):
        expand_to_all_pairs({"ann": {}}, ["x"], default="no")


def test_unknown_label_names_annotator_item_and_label() -> None:
    ratings = {"ann": {(1, 1): A}, "bob": {(1, 1): "Aligned"}}
    with pytest.raises(ValueError, match=r"annotator 'bob' gave item \(1, 1\) the unknown label 'Aligned'"):
        agreement_report(ratings, scope=SCOPE_SHOWN)


def test_unknown_scope_is_rejected() -> None:
    with pytest.raises(ValueError, match="scope must be one of"):
        agreement_report({"ann": {1: A}}, scope="everything")


def test_single_annotator_has_no_agreement_and_says_why() -> None:
    report = agreement_report({"ann": {1: A, 2: N}}, scope=SCOPE_SHOWN)
    assert report.cohen == {}
    assert report.items == 0
    assert report.fleiss is None
    assert "at least 2 annotators" in report.fleiss_undefined
    assert report.krippendorff_alpha is None
    assert report.krippendorff_undefined is not None


def test_identical_single_label_is_undefined_not_nan() -> None:
    ratings = {name: {item: N for item in range(5)} for name in ("ann", "bob", "eve")}
    report = agreement_report(ratings, scope=SCOPE_SHOWN)
    assert report.cohen[("ann", "bob")] is None
    assert report.cohen_undefined[("ann", "bob")] == UNDEFINED_ONE_LABEL
    assert report.fleiss is None
    assert report.fleiss_undefined == UNDEFINED_ONE_LABEL
    assert report.krippendorff_alpha is None
    assert report.krippendorff_undefined == UNDEFINED_ONE_LABEL


def test_annotator_with_no_items_is_listed_but_left_out_of_fleiss(three_annotators) -> None:
    ratings = {**three_annotators, "zoe": {}}
    report = agreement_report(ratings, scope=SCOPE_SHOWN)
    assert "zoe" in report.annotators
    assert report.fleiss_annotators == ("ann", "bob", "eve")
    assert report.fleiss == pytest.approx(7 / 15)
    assert report.cohen[("ann", "zoe")] is None
    assert "0 item(s) rated by both" in report.cohen_undefined[("ann", "zoe")]
    assert report.confusion("ann", "zoe") == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert report.krippendorff_alpha == pytest.approx(8 / 21)


def test_alignment_prf_task1_counts_partial_as_link() -> None:
    reference = {1: A, 2: P, 3: N, 4: A, 5: N}
    other = {1: A, 2: N, 3: P, 4: P, 6: A}
    prf = alignment_prf(reference, other)
    # reference links {1, 2, 4}; other links {1, 3, 4, 6}; item 5/6 missing on one side = not linked.
    assert (prf.tp, prf.fp, prf.fn) == (2, 2, 1)
    assert prf.precision == pytest.approx(2 / 4)
    assert prf.recall == pytest.approx(2 / 3)
    assert prf.f1 == pytest.approx(4 / 7)
    # Same numbers as scikit-learn's binary metrics over the union of items.
    items = sorted(reference.keys() | other.keys())
    y_ref = [reference.get(i) in (A, P) for i in items]
    y_other = [other.get(i) in (A, P) for i in items]
    assert prf.precision == pytest.approx(precision_score(y_ref, y_other))
    assert prf.recall == pytest.approx(recall_score(y_ref, y_other))
    assert prf.f1 == pytest.approx(f1_score(y_ref, y_other))


def test_alignment_prf_task2_counts_only_aligned() -> None:
    reference = {1: A, 2: P, 3: N, 4: A}
    other = {1: A, 2: P, 3: A, 4: P}
    prf = alignment_prf(reference, other, task=2)
    # reference links {1, 4}; other links {1, 3}.
    assert (prf.tp, prf.fp, prf.fn) == (1, 1, 1)
    assert prf.f1 == pytest.approx(0.5)


def test_alignment_prf_without_links_is_undefined_not_zero() -> None:
    prf = alignment_prf({1: N}, {1: N})
    assert (prf.tp, prf.fp, prf.fn) == (0, 0, 0)
    assert prf.precision is None and prf.recall is None and prf.f1 is None


def test_alignment_prf_rejects_unknown_task_and_label() -> None:
    with pytest.raises(ValueError, match="task must be 1"):
        alignment_prf({}, {}, task=3)
    with pytest.raises(ValueError, match=r"other gave item 1 the unknown label 'yes'"):
        alignment_prf({1: A}, {1: "yes"})


def test_pairwise_alignment_prf_uses_first_annotator_as_reference(three_annotators) -> None:
    prf = pairwise_alignment_prf(three_annotators)
    assert set(prf) == {("ann", "bob"), ("ann", "eve"), ("bob", "eve")}
    # Items both labelled: 1-4. There ann links {1, 2, 4}; eve links {1, 2}.
    assert (prf[("ann", "eve")].tp, prf[("ann", "eve")].fp, prf[("ann", "eve")].fn) == (2, 0, 1)
    assert prf[("ann", "eve")].items == 4
    assert prf[("ann", "eve")].precision == 1.0
    assert prf[("ann", "eve")].recall == pytest.approx(2 / 3)


def test_pairwise_prf_counts_only_items_both_labelled_as_inception_does() -> None:
    """The dashboard's "F1 0.382 next to kappa 0.80": one annotator labelled 10 items, the other 3 of them.

    Over the 3 items both labelled they agree on every link (F1 1); over all items, with annot2 as the
    reference, the 7 links on items annot2 never labelled count against it (F1 2*2 / (2*2 + 7 + 0) = 0.364),
    which is how much was labelled, not agreement. Cohen's kappa is over the same 3 items as the pairwise F1.
    """
    many = {(k, k): A for k in range(8)} | {(8, 8): N, (9, 9): P}
    few = {(0, 0): A, (1, 1): P, (8, 8): N}
    ratings = {"annot2": few, "annotator": many}
    both = pairwise_alignment_prf(ratings)[("annot2", "annotator")]
    assert (both.tp, both.fp, both.fn, both.items) == (2, 0, 0, 3)
    assert both.f1 == 1.0
    assert agreement_report(ratings, scope=SCOPE_SHOWN).cohen_items[("annot2", "annotator")] == both.items
    everything = pairwise_alignment_prf(ratings, scope=PRF_ALL)[("annot2", "annotator")]
    assert (everything.tp, everything.fp, everything.fn, everything.items) == (2, 7, 0, 10)
    assert everything.f1 == pytest.approx(4 / 11)  # annot2 as reference: annotator's 9 links, 2 confirmed
    task2 = pairwise_alignment_prf(ratings, task=2)[("annot2", "annotator")]
    assert (task2.tp, task2.fp, task2.fn) == (1, 1, 0)  # item 1: partial vs aligned is a link for Task 1 only


def test_prf_from_confusion_equals_the_pairwise_figure_over_items_both_labelled(three_annotators) -> None:
    report = agreement_report(three_annotators, scope=SCOPE_SHOWN)
    for task in (1, 2):
        pairwise = pairwise_alignment_prf(three_annotators, task=task)
        for (a, b), expected in pairwise.items():
            assert prf_from_confusion(report.confusion(a, b), task=task) == expected


def test_unknown_prf_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="P/R/F1 scope must be one of 'items both labelled', 'all items', got 'some'"):
        pairwise_alignment_prf({"a": {1: A}, "b": {1: A}}, scope="some")
    with pytest.raises(ValueError, match="P/R/F1 scope must be one of"):
        aligner_alignment_prf({"a": {1: A}}, {1: A}, scope="")


def test_aligner_alignment_prf_per_annotator(three_annotators) -> None:
    aligner = {(1, 1): A, (3, 3): A, (5, 5): P}
    prf = aligner_alignment_prf(three_annotators, aligner)
    assert list(prf) == ["ann", "bob", "eve"]
    # bob labelled items 1-5 and links {1, 2, 5}; the aligner links {1, 3, 5}.
    assert (prf["bob"].tp, prf["bob"].fp, prf["bob"].fn) == (2, 1, 1)
    # eve labelled items 1-4 and links {1, 2}; there the aligner links {1, 3}. Its link 5 is an item eve never labelled.
    assert (prf["eve"].tp, prf["eve"].fp, prf["eve"].fn, prf["eve"].items) == (1, 1, 1, 4)
    everything = aligner_alignment_prf(three_annotators, aligner, scope=PRF_ALL)
    assert (everything["eve"].tp, everything["eve"].fp, everything["eve"].fn, everything["eve"].items) == (1, 2, 1, 5)
    with pytest.raises(ValueError, match=r"aligner gave item \(1, 1\) the unknown label 'link'"):
        aligner_alignment_prf(three_annotators, {(1, 1): "link"})


def test_labels_are_the_three_annotation_labels() -> None:
    assert LABELS == ("aligned", "partial", "not_aligned")
