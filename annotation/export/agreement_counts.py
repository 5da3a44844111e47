"""The dataset card's agreement figures from running counts, so an export's memory does not grow with its labels.

:func:`annotation.adjudication.agreement.agreement_report` takes every rating at once (annotator -> item ->
label). An export sees its items one document pair at a time, and each measure only needs
sums over items, so :class:`AgreementCounts` adds each item's contribution as it comes and
keeps nothing per item:

- Cohen's kappa and the confusion matrices: per annotator pair, the 3 x 3 counts of the items
  both rated (kappa is computed from that matrix, as scikit-learn computes it);
- Fleiss' kappa: over the items rated by *every* annotator who rated anything, which is only
  known at the end, so the sums (items, squared category counts, category totals) are kept
  per number of raters of an item, and the end picks the number of annotators;
- Krippendorff's alpha (nominal): the coincidence matrix, items with m >= 2 ratings adding
  their pair counts divided by m - 1 (kept as integers per m, divided at the end).

Memory is a few integers per annotator pair and per rater count: bounded by the project's
team, not its labels. The figures equal :func:`agreement_report`'s over the same ratings
(tests/annotation/test_export_agreement.py compares them), with the same reasons when a
measure is undefined. Each item must be added once; the export's items, keyed by
(simple sentence, complex sentence), are unique because a document pair is.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from itertools import combinations

import numpy as np

from annotation.adjudication.agreement import (
    LABELS,
    SCOPE_SHOWN,
    SCOPES,
    UNDEFINED_ONE_LABEL,
    AgreementReport,
)

_CODE = {label: index for index, label in enumerate(LABELS)}
_SIZE = len(LABELS)


def _zeros() -> list[list[int]]:
    return [[0] * _SIZE for _ in LABELS]


class AgreementCounts:
    """Running sums for :func:`annotation.adjudication.agreement.agreement_report`, fed one item at a time."""

    def __init__(self) -> None:
        self.label_counts: dict[str, list[int]] = {}  # annotator -> count per label
        self.confusion: dict[tuple[str, str], list[list[int]]] = {}  # (a, b), a < b -> rows a's label, columns b's
        self.pairable_items = 0  # items with two or more ratings
        self.fleiss: dict[int, list[int]] = {}  # raters of an item -> [items, sum of squared category counts, *category totals]
        self.coincidence: dict[int, list[list[int]]] = {}  # m -> sum over items with m ratings of n_c n_k - [c == k] n_c
        self.pairable_values = [0] * _SIZE  # ratings per label over the items with two or more ratings

    @property
    def annotators(self) -> tuple[str, ...]:
        return tuple(sorted(self.label_counts))

    def add(self, item: Hashable, labels: Mapping[str, str | None], *, weight: int = 1) -> None:
        """Add one item's ratings (annotator -> label; an empty or None label is no rating); ``weight`` adds that many
        items rated alike at once (the agreement dashboard adds each pattern of ratings with its count)."""
        rated = {name: label for name, label in labels.items() if label}
        for name, label in rated.items():
            if not isinstance(name, str):
                raise ValueError(f"annotator names must be strings, got {name!r}")  # as validate_ratings
            if label not in _CODE:
                raise ValueError(f"annotator {name!r} gave item {item!r} the unknown label {label!r}; expected one of {', '.join(LABELS)}")
        if not rated or weight <= 0:
            return
        counts = [0] * _SIZE
        for name, label in rated.items():
            counts[_CODE[label]] += 1
            self.label_counts.setdefault(name, [0] * _SIZE)[_CODE[label]] += weight
        for a, b in combinations(sorted(rated), 2):
            self.confusion.setdefault((a, b), _zeros())[_CODE[rated[a]]][_CODE[rated[b]]] += weight
        raters = len(rated)
        fleiss = self.fleiss.setdefault(raters, [0] * (2 + _SIZE))
        fleiss[0] += weight
        fleiss[1] += weight * sum(count * count for count in counts)
        for index, count in enumerate(counts):
            fleiss[2 + index] += weight * count
        if raters >= 2:
            self.pairable_items += weight
            matrix = self.coincidence.setdefault(raters, _zeros())
            for c in range(_SIZE):
                self.pairable_values[c] += weight * counts[c]
                for k in range(_SIZE):
                    matrix[c][k] += weight * (counts[c] * counts[k] - (counts[c] if c == k else 0))

    def report(self, *, scope: str = SCOPE_SHOWN, roster: Iterable[str] = ()) -> AgreementReport:
        """The same report :func:`agreement_report` gives for every rating added so far.

        ``roster`` names annotators who may have rated nothing (the dashboard lists everyone assigned a pair): they are
        listed, and paired, as :func:`agreement_report` lists a name whose ratings are empty.
        """
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(map(repr, SCOPES))}, got {scope!r}")
        raters = self.annotators
        annotators = tuple(sorted(set(raters) | set(roster)))
        cohen: dict[tuple[str, str], float | None] = {}
        cohen_undefined: dict[tuple[str, str], str] = {}
        cohen_items: dict[tuple[str, str], int] = {}
        matrices: dict[tuple[str, str], list[list[int]]] = {}
        for pair in combinations(annotators, 2):
            matrix = [list(row) for row in self.confusion.get(pair, _zeros())]
            value, reason = _cohen_kappa(matrix)
            cohen[pair] = value
            if reason is not None:
                cohen_undefined[pair] = reason
            cohen_items[pair] = sum(map(sum, matrix))
            matrices[pair] = matrix
        fleiss_value, fleiss_reason, fleiss_items = self._fleiss(len(raters))
        alpha_value, alpha_reason = self._alpha(len(annotators))
        return AgreementReport(
            scope=scope, items=self.pairable_items, annotators=annotators, cohen=cohen, cohen_undefined=cohen_undefined,
            cohen_items=cohen_items, fleiss=fleiss_value, fleiss_undefined=fleiss_reason, fleiss_items=fleiss_items,
            fleiss_annotators=raters, krippendorff_alpha=alpha_value, krippendorff_undefined=alpha_reason,
            label_counts={name: dict(zip(LABELS, self.label_counts.get(name, [0] * _SIZE), strict=True)) for name in annotators},
            confusion_matrices=matrices,
        )  # fmt: skip

    def _fleiss(self, raters: int) -> tuple[float | None, str | None, int]:
        """statsmodels' ``fleiss_kappa(method="fleiss")`` over the items every annotator rated, from their sums."""
        if raters < 2:
            return None, "undefined: needs at least 2 annotators with ratings", 0
        items, squares, *totals = self.fleiss.get(raters, [0] * (2 + _SIZE))
        if not items:
            return None, "undefined: no item rated by every annotator", 0
        if sum(1 for total in totals if total) == 1:
            return None, UNDEFINED_ONE_LABEL, items
        p_cat = np.asarray(totals, dtype=float) / float(items * raters)
        p_mean = (squares - items * raters) / (raters * (raters - 1.0)) / items  # mean of the per-item agreement
        p_mean_exp = float((p_cat * p_cat).sum())
        value = (p_mean - p_mean_exp) / (1 - p_mean_exp) if p_mean_exp != 1 else math.nan
        return _defined(value, "undefined: statsmodels returned NaN") + (items,)

    def _alpha(self, raters: int) -> tuple[float | None, str | None]:
        """``krippendorff.alpha`` (nominal) from the coincidence matrix, as that package computes it."""
        if raters < 2:
            return None, "undefined: needs at least 2 annotators"
        if not self.pairable_items:
            return None, "undefined: no item rated by at least 2 annotators"
        if sum(1 for count in self.pairable_values if count) == 1:
            return None, UNDEFINED_ONE_LABEL
        o = np.zeros((_SIZE, _SIZE))
        for m in sorted(self.coincidence):
            o += np.asarray(self.coincidence[m], dtype=float) / (m - 1)
        n_v = o.sum(axis=0)
        e = (np.outer(n_v, n_v) - np.diagflat(n_v)) / (n_v.sum() - 1)
        d = 1.0 - np.eye(_SIZE)
        denominator = (e * d).sum()
        value = 1 - (o * d).sum() / denominator if denominator else math.nan
        return _defined(float(value), "undefined: krippendorff returned NaN")


def _defined(value: float, reason: str) -> tuple[float | None, str | None]:
    return (None, reason) if math.isnan(value) else (float(value), None)


def _cohen_kappa(matrix: list[list[int]]) -> tuple[float | None, str | None]:
    """scikit-learn's ``cohen_kappa_score`` (unweighted) from the confusion matrix, undefined cases named as before."""
    items = sum(map(sum, matrix))
    if items < 2:
        return None, f"undefined: {items} item(s) rated by both, needs at least 2"
    used = {i for i in range(_SIZE) if any(matrix[i])} | {j for j in range(_SIZE) if any(row[j] for row in matrix)}
    if len(used) == 1:
        return None, UNDEFINED_ONE_LABEL
    confusion = np.asarray(matrix, dtype=float)
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    expected = np.outer(sum0, sum1) / sum0.sum()
    weights = np.ones((_SIZE, _SIZE))
    np.fill_diagonal(weights, 0)
    denominator = (weights * expected).sum()
    value = float(1 - (weights * confusion).sum() / denominator) if denominator else math.nan
    return _defined(value, "undefined: scikit-learn returned NaN")
