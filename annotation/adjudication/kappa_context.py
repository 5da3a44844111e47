"""What explains a pair of annotators' Cohen κ on the agreement page: raw agreement, PABAK and the prevalent label."""

from __future__ import annotations

from dataclasses import dataclass

from models_ml.labels import LABELS


@dataclass(frozen=True)
class PairAgreement:
    observed: float | None  # share of the items both rated that they labelled alike
    pabak: float | None  # prevalence- and bias-adjusted kappa: (k · observed − 1) / (k − 1), k = the labels
    prevalent: str  # the label used most by the two together
    prevalence: float | None  # its share of their labels


def pair_agreement(matrix: list[list[int]]) -> PairAgreement:
    """:class:`PairAgreement` from a confusion matrix over LABELS (rows one annotator, columns the other).

    κ corrects the raw agreement for chance, and chance agreement is high when one label dominates (most sentence
    pairs are *not aligned*): two annotators agreeing on 89 % of items can have a κ near 0 or below. PABAK is what κ
    would be with the labels equally frequent (Byrt et al. 1993), so the two together say which case it is.
    """
    total = sum(sum(row) for row in matrix)
    if not total:
        return PairAgreement(None, None, "", None)
    k = len(matrix)
    observed = sum(matrix[i][i] for i in range(k)) / total
    used = [sum(matrix[i]) + sum(row[i] for row in matrix) for i in range(k)]  # each label's uses by either annotator
    top = max(range(k), key=lambda i: used[i])
    return PairAgreement(observed, (k * observed - 1) / (k - 1), LABELS[top], used[top] / (2 * total))
