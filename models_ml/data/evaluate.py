"""Alignment evaluation: Task 1 / Task 2 precision, recall and F1 (Jiang et al. 2020, section 4.2).

- Task 1: aligned + partial vs not aligned. Task 2: aligned vs partial + not aligned.
- Sentence-pair level: every n:m group is expanded to all its (simple, complex) pairs.
- Group level: a predicted group counts only if its (complex set, simple set) equals a gold
  group exactly, as in the DEplain evaluation. Task 1 ignores labels; Task 2 keeps only
  groups labelled "aligned" on both sides.
- Identical pairs: the paper excludes them, DEplain's reference figures include them. We
  include them unless ``exclude_identical=True``; then the sentence pairs of gold groups
  flagged ``identical`` are removed from gold and prediction alike, and so are those groups.
- When a denominator is 0 (nothing predicted, or nothing gold), the corresponding precision
  or recall is defined as 0, and F1 is 0 when precision + recall is 0: an empty prediction
  scores 0, never a ZeroDivisionError.
- Corpus figures are micro-averages: counts are summed over document pairs first.
- Per-shape recall (:func:`shape_table`): gold groups by shape, written complex:simple
  ("1:2" is one complex sentence split into two simple ones), and how many of each are
  predicted exactly, to see which kinds of alignment an aligner misses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from models_ml.data.io import AlignmentGroup
from models_ml.labels import ALIGNED, LINKED_LABELS

__all__ = [
    "PRF",
    "SHAPES",
    "EvaluationReport",
    "SweepResult",
    "evaluate_corpus",
    "evaluate_pairs",
    "format_report",
    "format_shape_table",
    "group_shape",
    "pair_labels_from_groups",
    "shape_table",
    "threshold_sweep",
]

PairKey = tuple[int, int]  # (simple sentence j, complex sentence i)
_STRENGTH = {"partial": 1, "aligned": 2}


@dataclass(frozen=True)
class PRF:
    """Counts of one comparison and the precision, recall and F1 they give (0 when undefined)."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def as_dict(self) -> dict[str, float | int]:
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


@dataclass(frozen=True)
class EvaluationReport:
    """Task 1 and Task 2 at sentence-pair and group level, over ``documents`` document pairs."""

    sentence_task1: PRF
    sentence_task2: PRF
    group_task1: PRF
    group_task2: PRF
    documents: int = 1

    def __add__(self, other: EvaluationReport) -> EvaluationReport:
        return EvaluationReport(
            self.sentence_task1 + other.sentence_task1,
            self.sentence_task2 + other.sentence_task2,
            self.group_task1 + other.group_task1,
            self.group_task2 + other.group_task2,
            self.documents + other.documents,
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "documents": self.documents,
            "sentence": {"task1": self.sentence_task1.as_dict(), "task2": self.sentence_task2.as_dict()},
            "group": {"task1": self.group_task1.as_dict(), "task2": self.group_task2.as_dict()},
        }


@dataclass(frozen=True)
class SweepResult:
    """Best threshold of a score-only measure, its figures, and the whole curve (threshold, PRF), high to low."""

    threshold: float
    metrics: PRF
    curve: list[tuple[float, PRF]]


def _check_group(group: AlignmentGroup, m: int, n: int) -> None:
    if any(j >= m for j in group.simple) or any(i >= n for i in group.complex):
        raise ValueError(f"group complex={group.complex} simple={group.simple} is out of range for {m} simple and {n} complex sentences")


def pair_labels_from_groups(groups: Iterable[AlignmentGroup], m: int, n: int) -> dict[PairKey, str]:
    """Expand n:m groups to sentence pairs: {(simple j, complex i): "aligned" | "partial"}.

    m and n are the numbers of simple and complex sentences, used to reject indices out of
    range. A pair in two groups keeps the stronger label (aligned over partial).
    """
    labels: dict[PairKey, str] = {}
    for group in groups:
        _check_group(group, m, n)
        for j in group.simple:
            for i in group.complex:
                known = labels.get((j, i))
                if known is None or _STRENGTH[group.label] > _STRENGTH[known]:
                    labels[(j, i)] = group.label
    return labels


def _counts(gold: set, predicted: set) -> PRF:
    return PRF(tp=len(gold & predicted), fp=len(predicted - gold), fn=len(gold - predicted))


def _group_key(group: AlignmentGroup) -> tuple[frozenset[int], frozenset[int]]:
    return frozenset(group.complex), frozenset(group.simple)


def evaluate_pairs(
    gold_groups: Sequence[AlignmentGroup],
    pred_groups: Sequence[AlignmentGroup],
    m: int,
    n: int,
    *,
    exclude_identical: bool = False,
) -> EvaluationReport:
    """Score one document pair with m simple and n complex sentences (see the module docstring)."""
    if m < 0 or n < 0:
        raise ValueError(f"sentence counts must be >= 0, got m={m}, n={n}")
    excluded_pairs: set[PairKey] = set()
    excluded_groups: set[tuple[frozenset[int], frozenset[int]]] = set()
    if exclude_identical:
        identical = [g for g in gold_groups if g.identical]
        excluded_pairs = set(pair_labels_from_groups(identical, m, n))
        excluded_groups = {_group_key(g) for g in identical}
        gold_groups = [g for g in gold_groups if not g.identical]
    gold_pairs = pair_labels_from_groups(gold_groups, m, n)
    pred_pairs = pair_labels_from_groups(pred_groups, m, n)
    gold_pairs = {key: label for key, label in gold_pairs.items() if key not in excluded_pairs}
    pred_pairs = {key: label for key, label in pred_pairs.items() if key not in excluded_pairs}
    pred_kept = [g for g in pred_groups if _group_key(g) not in excluded_groups]
    return EvaluationReport(
        sentence_task1=_counts(set(gold_pairs), set(pred_pairs)),
        sentence_task2=_counts(
            {k for k, label in gold_pairs.items() if label == "aligned"},
            {k for k, label in pred_pairs.items() if label == "aligned"},
        ),
        group_task1=_counts({_group_key(g) for g in gold_groups}, {_group_key(g) for g in pred_kept}),
        group_task2=_counts(
            {_group_key(g) for g in gold_groups if g.label == "aligned"},
            {_group_key(g) for g in pred_kept if g.label == "aligned"},
        ),
    )


def evaluate_corpus(
    documents: Iterable[tuple[Sequence[AlignmentGroup], Sequence[AlignmentGroup], int, int]],
    *,
    exclude_identical: bool = False,
) -> EvaluationReport:
    """Micro-average over document pairs given as (gold_groups, pred_groups, m, n): counts are summed."""
    total: EvaluationReport | None = None
    for gold, predicted, m, n in documents:
        report = evaluate_pairs(gold, predicted, m, n, exclude_identical=exclude_identical)
        total = report if total is None else total + report
    if total is None:
        raise ValueError("evaluate_corpus needs at least one document pair")
    return total


def threshold_sweep(
    scores: Sequence[np.ndarray],
    gold_labels: Sequence[Mapping[PairKey, str]],
    task: int,
) -> SweepResult:
    """Pick the threshold t of a score-only measure that maximises sentence-pair F1.

    scores: one (m, n) matrix per document pair, row j = simple sentence, column i = complex
    sentence; a pair is predicted positive when its score >= t. gold_labels: one
    :func:`pair_labels_from_groups` dict per document pair. task: 1 (aligned + partial are
    positive) or 2 (only aligned). Every distinct score is tried; among equal F1 the highest
    threshold wins (fewer predictions for the same F1).
    """
    if task not in (1, 2):
        raise ValueError(f"task must be 1 or 2, got {task!r}")
    if len(scores) != len(gold_labels):
        raise ValueError(f"got {len(scores)} score matrices but {len(gold_labels)} gold label sets")
    if not scores:
        raise ValueError("threshold_sweep needs at least one document pair")
    positive = set(LINKED_LABELS) if task == 1 else {ALIGNED}
    flat_scores, flat_gold = [], []
    for doc, (matrix, labels) in enumerate(zip(scores, gold_labels)):
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2:
            raise ValueError(f"document {doc}: scores must be a 2-D (m, n) matrix, got shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise ValueError(f"document {doc}: scores contain NaN or infinite values")
        is_gold = np.zeros(matrix.shape, dtype=bool)  # (m, n)
        for (j, i), label in labels.items():
            if not (0 <= j < matrix.shape[0] and 0 <= i < matrix.shape[1]):
                raise ValueError(f"document {doc}: gold pair {(j, i)} is outside the {matrix.shape} score matrix")
            is_gold[j, i] = label in positive
        flat_scores.append(matrix.ravel())
        flat_gold.append(is_gold.ravel())
    all_scores = np.concatenate(flat_scores)  # (N,) every sentence pair of every document
    all_gold = np.concatenate(flat_gold)  # (N,)
    order = np.argsort(-all_scores, kind="stable")  # (N,) high to low
    sorted_scores = all_scores[order]  # (N,)
    true_positives = np.cumsum(all_gold[order])  # (N,) positives among the top r+1 pairs
    last_of_value = np.flatnonzero(np.r_[sorted_scores[1:] != sorted_scores[:-1], True])  # (T,) last rank per distinct score
    total_gold = int(all_gold.sum())
    curve: list[tuple[float, PRF]] = []
    for rank in last_of_value:
        tp = int(true_positives[rank])
        curve.append((float(sorted_scores[rank]), PRF(tp=tp, fp=int(rank) + 1 - tp, fn=total_gold - tp)))
    best_threshold, best = max(curve, key=lambda point: (point[1].f1, point[0]))
    return SweepResult(threshold=best_threshold, metrics=best, curve=curve)


def group_score_sweep(
    documents: Sequence[tuple[Sequence[AlignmentGroup], Sequence[AlignmentGroup], int, int]],
    *,
    exclude_identical: bool = False,
    max_thresholds: int = 200,
) -> dict[str, tuple[float, PRF]] | None:
    """Best threshold on the predicted groups' scores for each figure: name -> (threshold, PRF).

    For predictions from a score-only measure: keeping only groups whose score is >= t,
    which t maximises each of the four F1s (sentence/group x Task 1/2)? Tried thresholds
    are the distinct scores, thinned to ``max_thresholds`` quantiles. Returns None when a
    predicted group has no score or all scores are equal (nothing to sweep).
    """
    scores = [g.score for _, predicted, _, _ in documents for g in predicted]
    if not scores or any(score is None for score in scores) or len(set(scores)) < 2:
        return None
    distinct = np.unique(np.asarray(scores, dtype=np.float64))  # (T,) ascending
    if distinct.size > max_thresholds:
        distinct = np.unique(np.quantile(distinct, np.linspace(0.0, 1.0, max_thresholds)))
    best: dict[str, tuple[float, PRF]] = {}
    for threshold in distinct.tolist():
        kept = [(gold, [g for g in predicted if g.score >= threshold], m, n) for gold, predicted, m, n in documents]
        report = evaluate_corpus(kept, exclude_identical=exclude_identical)
        for name, prf in (
            ("sentence task 1", report.sentence_task1),
            ("sentence task 2", report.sentence_task2),
            ("group task 1", report.group_task1),
            ("group task 2", report.group_task2),
        ):
            if name not in best or prf.f1 > best[name][1].f1:
                best[name] = (float(threshold), prf)
    return best


def format_sweep(sweep: dict[str, tuple[float, PRF]]) -> str:
    """The sweep as a table: the threshold that maximises each F1, and the P/R there."""
    header = f"{'max F1 over group-score thresholds':<36} {'t':>7} {'P':>7} {'R':>7} {'F1':>7}"
    lines = [header, "-" * len(header)]
    for name, (threshold, prf) in sweep.items():
        lines.append(f"{name:<36} {threshold:>7.4f} {prf.precision:>7.4f} {prf.recall:>7.4f} {prf.f1:>7.4f}")
    return "\n".join(lines)


def format_report(report: EvaluationReport) -> str:
    """A fixed-width table of both tasks at both levels, for the CLI and logs."""
    header = f"{'level':<9} {'task':<5} {'P':>7} {'R':>7} {'F1':>7} {'TP':>7} {'FP':>7} {'FN':>7}"
    lines = [f"{report.documents} document pair(s)", header, "-" * len(header)]
    for level, task, prf in (
        ("sentence", "1", report.sentence_task1),
        ("sentence", "2", report.sentence_task2),
        ("group", "1", report.group_task1),
        ("group", "2", report.group_task2),
    ):
        lines.append(f"{level:<9} {task:<5} {prf.precision:>7.4f} {prf.recall:>7.4f} {prf.f1:>7.4f} {prf.tp:>7d} {prf.fp:>7d} {prf.fn:>7d}")
    return "\n".join(lines)


SHAPES = ("1:1", "1:2", "1:3+", "n:1", "n:m")  # complex count : simple count, n and m > 1


def group_shape(group: AlignmentGroup) -> str:
    """The group's shape as complex:simple: "1:1", "1:2", "1:3+" (splits), "n:1" (merges) or "n:m"."""
    complex_count, simple_count = len(group.complex), len(group.simple)
    if complex_count == 1:
        return "1:1" if simple_count == 1 else "1:2" if simple_count == 2 else "1:3+"
    return "n:1" if simple_count == 1 else "n:m"


def shape_table(
    documents: Iterable[tuple[Sequence[AlignmentGroup], Sequence[AlignmentGroup]]],
) -> dict[str, tuple[int, int]]:
    """Per shape of gold group: (gold groups of that shape, how many a predicted group matches exactly).

    documents: (gold groups, predicted groups) per document pair. A gold group is matched
    when some predicted group has the same set of complex and the same set of simple
    sentences; labels are ignored (as in Task 1). Every shape of :data:`SHAPES` is a key,
    with (0, 0) when the gold has none.
    """
    gold_counts = dict.fromkeys(SHAPES, 0)
    exact_counts = dict.fromkeys(SHAPES, 0)
    for gold, predicted in documents:
        predicted_keys = {_group_key(group) for group in predicted}
        for group in gold:
            shape = group_shape(group)
            gold_counts[shape] += 1
            exact_counts[shape] += int(_group_key(group) in predicted_keys)
    return {shape: (gold_counts[shape], exact_counts[shape]) for shape in SHAPES}


def format_shape_table(table: Mapping[str, tuple[int, int]]) -> str:
    """:func:`shape_table` as a fixed-width table: gold count, exact matches and their share, per shape and in all."""
    header = f"{'shape':<6} {'gold':>7} {'exact':>7} {'recall':>7}"
    lines = [header, "-" * len(header)]
    rows = [*table.items(), ("all", (sum(g for g, _ in table.values()), sum(e for _, e in table.values())))]
    for shape, (gold, exact) in rows:
        recall = f"{exact / gold:>7.4f}" if gold else f"{'-':>7}"
        lines.append(f"{shape:<6} {gold:>7d} {exact:>7d} {recall}")
    return "\n".join(lines)
