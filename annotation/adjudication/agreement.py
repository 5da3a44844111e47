"""Inter-annotator agreement over sentence-pair labels, as plain data.

Annotators label (simple sentence, complex sentence) pairs as ``aligned``,
``partial`` or ``not_aligned``. This module turns those labels into the
numbers the agreement dashboard shows: Cohen's kappa for each pair of
annotators, Fleiss' kappa, Krippendorff's alpha (nominal), confusion matrices
and set-level alignment precision / recall / F1 (between annotators, and
between each annotator and the automatic aligner).

It never imports Django (the label set comes from :mod:`models_ml.labels`): the annotation app's selectors read the labels and
pass them here as ``ratings``, a mapping ``annotator name -> {item -> label}``,
where an item is any hashable key (the app uses
``(simple_sentence_id, complex_sentence_id)`` tuples).

The statistics come from maintained libraries rather than hand-written
formulas: scikit-learn (Cohen's kappa, confusion matrix), statsmodels
(Fleiss' kappa) and ``krippendorff`` (Krippendorff's alpha). What this module
owns is the bookkeeping around them: which items each measure is computed
over, and saying *why* a measure is undefined instead of showing ``nan``.

Two scopes are reported, and every report says which one it is:

* ``"shown candidates"``: only the pairs annotators were actually shown;
* ``"all sentence pairs"``: every sentence pair of the document pair, with the
  pairs nobody was shown counted as ``not_aligned`` (see
  :func:`expand_to_all_pairs`). The mass of trivially not-aligned pairs
  inflates agreement in this scope, which is why both are shown side by side.

Set-level P/R/F1 has scopes of its own (:data:`PRF_SCOPES`): between two annotators it is
computed, as INCEpTION computes pairwise agreement, over the items *both* labelled
(``PRF_BOTH``), the same items Cohen's kappa uses; against the aligner, over the items the
annotator labelled. The older figure over every item either side labelled (``PRF_ALL``, an
item one of them never labelled counting as "no link" for them) is kept, named as such: it
mostly measures how much each annotator has labelled, not whether they agree.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

import krippendorff
import numpy as np

from annotation.adjudication.kappa_context import PairAgreement, pair_agreement
from models_ml.labels import ALIGNED, LABELS, LINKED_LABELS, NOT_ALIGNED

SCOPE_SHOWN = "shown candidates"
SCOPE_ALL_PAIRS = "all sentence pairs"
SCOPES: tuple[str, ...] = (SCOPE_SHOWN, SCOPE_ALL_PAIRS)

PRF_BOTH = "items both labelled"
PRF_ALL = "all items"
PRF_SCOPES: tuple[str, ...] = (PRF_BOTH, PRF_ALL)

# Task 1 counts a partial alignment as a link; Task 2 only counts full ones.
LINKED_LABELS_BY_TASK: dict[int, frozenset[str]] = {
    1: frozenset(LINKED_LABELS),
    2: frozenset({ALIGNED}),
}

UNDEFINED_ONE_LABEL = "undefined: one label only"

Ratings = Mapping[str, Mapping[Hashable, str]]
AnnotatorPair = tuple[str, str]


@dataclass(frozen=True)
class AgreementReport:
    """Agreement among annotators over one scope of one document pair or project.

    A measure is ``None`` when it is undefined for this data (a single
    annotator, no shared items, or everyone using one label so that chance
    agreement is already perfect); the matching ``*_undefined`` field says why,
    so the dashboard can show the reason rather than a misleading ``nan``.
    """

    scope: str
    # Items with at least two ratings: the only ones that carry agreement.
    items: int
    annotators: tuple[str, ...]
    # Keys are (a, b) with a < b. A pair with no common items is still listed.
    cohen: dict[AnnotatorPair, float | None]
    cohen_undefined: dict[AnnotatorPair, str]
    cohen_items: dict[AnnotatorPair, int]
    # Fleiss needs a complete items x raters table, so it is computed over the
    # items rated by every annotator who rated anything.
    fleiss: float | None
    fleiss_undefined: str | None
    fleiss_items: int
    fleiss_annotators: tuple[str, ...]
    # Krippendorff's alpha uses every item with >= 2 ratings (missing allowed).
    krippendorff_alpha: float | None
    krippendorff_undefined: str | None
    # annotator -> label -> count, every label of LABELS present.
    label_counts: dict[str, dict[str, int]]
    # (a, b) with a < b -> 3x3 counts, rows = a's label, cols = b's label.
    confusion_matrices: dict[AnnotatorPair, list[list[int]]] = field(repr=False)

    def confusion(self, a: str, b: str) -> list[list[int]]:
        """Confusion matrix over the items both rated: rows ``a``'s label, columns ``b``'s.

        Either order of the two names works: the stored matrix is transposed
        when asked for as (b, a), so callers need not know the key order.
        """
        if (a, b) in self.confusion_matrices:
            return [list(row) for row in self.confusion_matrices[(a, b)]]
        if (b, a) in self.confusion_matrices:
            stored = self.confusion_matrices[(b, a)]
            return [list(column) for column in zip(*stored)]
        raise ValueError(
            f"no confusion matrix for annotators {a!r} and {b!r}; annotators in this report: {', '.join(self.annotators) or '(none)'}"
        )

    @property
    def cohen_context(self) -> dict[AnnotatorPair, PairAgreement]:
        """Beside each pair's κ, what explains it (a κ near 0 at 89 % raw agreement, say): raw agreement, PABAK, and how
        much of both annotators' labels the most frequent label is."""
        return {pair: pair_agreement(matrix) for pair, matrix in self.confusion_matrices.items()}


@dataclass(frozen=True)
class PRF:
    """Set-level alignment precision / recall / F1 of ``other`` against ``reference``.

    An item is a link when its label counts as linked for the task. A value
    is ``None`` when its denominator is zero (e.g. precision when ``other``
    links nothing): showing 0 or 1 there would invent a result.
    """

    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    items: int = 0  # the items compared: labelled by either side of the two mappings passed in


def validate_ratings(ratings: Ratings) -> None:
    """Raise ``ValueError`` naming the annotator, item and label of the first bad rating.

    Unknown labels usually mean a caller passed display text or a stale
    label set; failing loudly beats silently computing agreement on garbage.
    """
    if not isinstance(ratings, Mapping):
        raise ValueError(f"ratings must map annotator name -> {{item: label}}, got {type(ratings).__name__}")
    for annotator, labels in ratings.items():
        if not isinstance(annotator, str):
            raise ValueError(f"annotator names must be strings, got {annotator!r}")
        _validate_labels(labels, owner=f"annotator {annotator!r}")


def expand_to_all_pairs(ratings: Ratings, universe: Iterable[Hashable], default: str = NOT_ALIGNED) -> dict[str, dict[Hashable, str]]:
    """The "all sentence pairs" view: every unrated item of ``universe`` gets ``default``.

    Only pass annotators who completed the document pair: for them an unshown
    or unlabelled pair really is a "no link" judgement; for someone half-way
    through it would be a guess. Existing labels are kept as they are.
    """
    validate_ratings(ratings)
    if default not in LABELS:
        raise ValueError(f"default label {default!r} is not one of {', '.join(LABELS)}")
    all_items = list(dict.fromkeys(universe))
    known_items = set(all_items)
    expanded: dict[str, dict[Hashable, str]] = {}
    for annotator, labels in ratings.items():
        outside = [item for item in labels if item not in known_items]
        if outside:
            raise ValueError(f"annotator {annotator!r} rated item {outside[0]!r}, which is not in the universe of sentence pairs")
        expanded[annotator] = {item: labels.get(item, default) for item in all_items}
    return expanded


def agreement_report(ratings: Ratings, *, scope: str) -> AgreementReport:
    """Compute every agreement measure for ``ratings`` and label the result with ``scope``.

    ``scope`` is not inferred: the caller knows whether it passed the shown
    candidates or the output of :func:`expand_to_all_pairs`, and the
    dashboard must never show one as the other.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(map(repr, SCOPES))}, got {scope!r}")
    validate_ratings(ratings)
    annotators = tuple(sorted(ratings))
    by_item = _ratings_by_item(ratings, annotators)

    cohen: dict[AnnotatorPair, float | None] = {}
    cohen_undefined: dict[AnnotatorPair, str] = {}
    cohen_items: dict[AnnotatorPair, int] = {}
    confusion_matrices: dict[AnnotatorPair, list[list[int]]] = {}
    for a, b in combinations(annotators, 2):
        common = [item for item in ratings[a] if item in ratings[b]]
        labels_a = [ratings[a][item] for item in common]
        labels_b = [ratings[b][item] for item in common]
        value, reason = _cohen_kappa(labels_a, labels_b)
        cohen[(a, b)] = value
        if reason is not None:
            cohen_undefined[(a, b)] = reason
        cohen_items[(a, b)] = len(common)
        confusion_matrices[(a, b)] = _confusion(labels_a, labels_b)

    # An annotator with no ratings would empty the "rated by everyone" set.
    fleiss_annotators = tuple(name for name in annotators if ratings[name])
    fleiss_rows: list[list[Hashable]] = []
    if len(fleiss_annotators) < 2:
        fleiss_value, fleiss_reason = None, "undefined: needs at least 2 annotators with ratings"
    else:
        fleiss_rows = [[labels[name] for name in fleiss_annotators] for labels in by_item.values() if len(labels) == len(fleiss_annotators)]
        fleiss_value, fleiss_reason = _fleiss_kappa(fleiss_rows, LABELS)

    alpha_units = [[labels.get(name) for labels in by_item.values() if len(labels) >= 2] for name in annotators]
    alpha_value, alpha_reason = _krippendorff_alpha(alpha_units, LABELS)

    return AgreementReport(
        scope=scope,
        items=sum(1 for labels in by_item.values() if len(labels) >= 2),
        annotators=annotators,
        cohen=cohen,
        cohen_undefined=cohen_undefined,
        cohen_items=cohen_items,
        fleiss=fleiss_value,
        fleiss_undefined=fleiss_reason,
        fleiss_items=len(fleiss_rows),
        fleiss_annotators=fleiss_annotators,
        krippendorff_alpha=alpha_value,
        krippendorff_undefined=alpha_reason,
        label_counts={name: {label: sum(1 for v in ratings[name].values() if v == label) for label in LABELS} for name in annotators},
        confusion_matrices=confusion_matrices,
    )


def alignment_prf(reference: Mapping[Hashable, str], other: Mapping[Hashable, str], *, task: int = 1) -> PRF:
    """Precision / recall / F1 of ``other``'s links against ``reference``'s links.

    Agreement is measured on the *sets* of linked sentence pairs, as in
    sentence-alignment evaluation: an item missing from one side counts as
    not linked there. ``task=1`` counts ``aligned`` and ``partial`` as links;
    ``task=2`` counts only ``aligned``.
    """
    linked_labels = _linked_labels(task)
    _validate_labels(reference, owner="reference")
    _validate_labels(other, owner="other")
    reference_links = {item for item, label in reference.items() if label in linked_labels}
    other_links = {item for item, label in other.items() if label in linked_labels}
    tp = len(reference_links & other_links)
    return prf_from_counts(tp, len(other_links - reference_links), len(reference_links - other_links), len(set(reference) | set(other)))


def prf_from_counts(tp: int, fp: int, fn: int, items: int) -> PRF:
    """P/R/F1 from true positives, false positives and false negatives over ``items`` compared."""
    return PRF(
        tp=tp, fp=fp, fn=fn, precision=tp / (tp + fp) if tp + fp else None, recall=tp / (tp + fn) if tp + fn else None,
        f1=2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None, items=items,
    )  # fmt: skip


def pairwise_alignment_prf(ratings: Ratings, *, task: int = 1, scope: str = PRF_BOTH) -> dict[AnnotatorPair, PRF]:
    """Alignment P/R/F1 for each annotator pair (a, b), a < b, with ``a`` as reference.

    ``scope`` ``PRF_BOTH`` (the default, INCEpTION's pairwise agreement) compares the two over the
    items both labelled, the items their Cohen's kappa and confusion matrix use; ``PRF_ALL`` over
    every item either labelled, an item one of them did not label counting as no link for them.
    F1 is symmetric; precision and recall swap if the pair is read the other way.
    """
    _check_prf_scope(scope)
    validate_ratings(ratings)
    result = {}
    for a, b in combinations(sorted(ratings), 2):
        reference, other = ratings[a], ratings[b]
        if scope == PRF_BOTH:
            reference = {item: label for item, label in reference.items() if item in other}
            other = {item: label for item, label in other.items() if item in reference}
        result[(a, b)] = alignment_prf(reference, other, task=task)
    return result


def aligner_alignment_prf(
    ratings: Ratings, aligner_labels: Mapping[Hashable, str], *, task: int = 1, scope: str = PRF_BOTH
) -> dict[str, PRF]:
    """Alignment P/R/F1 of the automatic aligner against each annotator.

    The annotator is the reference, so precision is the share of the aligner's links the
    annotator confirms and recall the share of the annotator's links the aligner found.
    ``PRF_BOTH`` (the default) compares over the items the annotator labelled (the aligner's
    verdict on an item it did not propose is "not aligned"); ``PRF_ALL`` also counts the
    aligner's links on items the annotator never labelled, as false positives.
    """
    _check_prf_scope(scope)
    validate_ratings(ratings)
    _validate_labels(aligner_labels, owner="aligner")
    result = {}
    for name in sorted(ratings):
        aligner = aligner_labels
        if scope == PRF_BOTH:
            aligner = {item: label for item, label in aligner_labels.items() if item in ratings[name]}
        result[name] = alignment_prf(ratings[name], aligner, task=task)
    return result


def prf_from_confusion(matrix: list[list[int]], *, task: int = 1) -> PRF:
    """P/R/F1 over the items of a confusion matrix (rows the reference's label, columns the other's, in LABELS order).

    A confusion matrix holds exactly the items both annotators rated, so this is
    :func:`pairwise_alignment_prf` with ``PRF_BOTH`` from counts alone (the export's dataset card keeps
    only counts).
    """
    linked = [label in _linked_labels(task) for label in LABELS]
    tp = sum(matrix[i][j] for i in range(len(LABELS)) for j in range(len(LABELS)) if linked[i] and linked[j])
    fp = sum(matrix[i][j] for i in range(len(LABELS)) for j in range(len(LABELS)) if not linked[i] and linked[j])
    fn = sum(matrix[i][j] for i in range(len(LABELS)) for j in range(len(LABELS)) if linked[i] and not linked[j])
    return prf_from_counts(tp, fp, fn, sum(map(sum, matrix)))


def _check_prf_scope(scope: str) -> None:
    if scope not in PRF_SCOPES:
        raise ValueError(f"P/R/F1 scope must be one of {', '.join(map(repr, PRF_SCOPES))}, got {scope!r}")


def _validate_labels(labels: Mapping[Hashable, str], *, owner: str) -> None:
    if not isinstance(labels, Mapping):
        raise ValueError(f"{owner} labels must map item -> label, got {type(labels).__name__}")
    for item, label in labels.items():
        if label not in LABELS:
            raise ValueError(f"{owner} gave item {item!r} the unknown label {label!r}; expected one of {', '.join(LABELS)}")


def _linked_labels(task: int) -> frozenset[str]:
    if task not in LINKED_LABELS_BY_TASK:
        raise ValueError(f"task must be 1 (aligned or partial) or 2 (aligned only), got {task!r}")
    return LINKED_LABELS_BY_TASK[task]


def _ratings_by_item(ratings: Ratings, annotators: tuple[str, ...]) -> dict[Hashable, dict[str, str]]:
    """Item -> {annotator: label}, in first-seen order (items need not be sortable)."""
    by_item: dict[Hashable, dict[str, str]] = {}
    for name in annotators:
        for item, label in ratings[name].items():
            by_item.setdefault(item, {})[name] = label
    return by_item


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _cohen_kappa(labels_a: list[str], labels_b: list[str]) -> tuple[float | None, str | None]:
    """Cohen's kappa via scikit-learn, with the undefined cases named.

    Kappa is 0/0 when chance agreement is already 1, i.e. both annotators
    used the same single label. That case is detected here so the reason is
    ours; a ``nan`` from scikit-learn is still mapped to ``None`` as a
    safety net.
    """
    if len(labels_a) < 2:
        return None, f"undefined: {len(labels_a)} item(s) rated by both, needs at least 2"
    if len(set(labels_a) | set(labels_b)) == 1:
        return None, UNDEFINED_ONE_LABEL
    from sklearn.metrics import cohen_kappa_score  # imported here: scikit-learn costs a process 1.8 s

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(labels_a, labels_b, labels=list(LABELS))
    defined = _defined(value)
    return defined, None if defined is not None else "undefined: scikit-learn returned NaN"


def _confusion(labels_a: list[str], labels_b: list[str]) -> list[list[int]]:
    if not labels_a:
        return [[0] * len(LABELS) for _ in LABELS]
    from sklearn.metrics import confusion_matrix as sklearn_confusion_matrix  # imported here, as cohen_kappa_score is

    matrix = sklearn_confusion_matrix(labels_a, labels_b, labels=list(LABELS))
    return [[int(count) for count in row] for row in matrix]


def _fleiss_kappa(rows: list[list[Hashable]], categories: tuple[Hashable, ...]) -> tuple[float | None, str | None]:
    """Fleiss' kappa via statsmodels over complete rows (one label per rater per item).

    ``categories`` is a parameter rather than always ``LABELS`` so that the
    published five-category example can be run through the same code path.
    """
    if not rows:
        return None, "undefined: no item rated by every annotator"
    if len({label for row in rows for label in row}) == 1:
        return None, UNDEFINED_ONE_LABEL
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa  # imported here: statsmodels costs a process 1.2 s

    code = {label: index for index, label in enumerate(categories)}
    coded = np.array([[code[label] for label in row] for row in rows])  # (items, raters)
    table, _ = aggregate_raters(coded, n_cat=len(categories))  # (items, categories)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = fleiss_kappa(table, method="fleiss")
    defined = _defined(value)
    return defined, None if defined is not None else "undefined: statsmodels returned NaN"


def _krippendorff_alpha(units_by_rater: list[list[Hashable | None]], categories: tuple[Hashable, ...]) -> tuple[float | None, str | None]:
    """Nominal Krippendorff's alpha via ``krippendorff``; ``None`` entries are missing ratings.

    ``units_by_rater`` is the raters x units reliability matrix. Labels are
    coded as category indices and the full ``categories`` domain is passed,
    so the codes do not depend on which labels happen to occur.
    """
    if len(units_by_rater) < 2:
        return None, "undefined: needs at least 2 annotators"
    code = {label: float(index) for index, label in enumerate(categories)}
    matrix = np.array(
        [[np.nan if label is None else code[label] for label in row] for row in units_by_rater],
        dtype=float,
    ).reshape(len(units_by_rater), -1)  # (raters, units)
    pairable = np.sum(~np.isnan(matrix), axis=0) >= 2  # (units,)
    if not pairable.any():
        return None, "undefined: no item rated by at least 2 annotators"
    if len(np.unique(matrix[:, pairable][~np.isnan(matrix[:, pairable])])) == 1:
        return None, UNDEFINED_ONE_LABEL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = krippendorff.alpha(
            reliability_data=matrix,
            value_domain=list(code.values()),
            level_of_measurement="nominal",
        )
    defined = _defined(float(value))
    return defined, None if defined is not None else "undefined: krippendorff returned NaN"
