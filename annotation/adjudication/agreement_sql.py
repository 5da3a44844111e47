"""The agreement dashboard's project-wide figures, summed in PostgreSQL: one query however many pairs and labels.

:mod:`annotation.adjudication.agreement_data` builds every rating in Python (annotator -> item -> label), per document
pair; over a whole project that is every label plus, in the "all sentence pairs" scope, every sentence pair of every
document pair. Each measure only needs sums over items, though (:mod:`annotation.export.agreement_counts`), so this
module has PostgreSQL build the same ratings and sum them, and fills an :class:`AgreementCounts` per scope:

- per annotator, their ratings per label;
- per two annotators, the confusion matrix of the items both rated;
- per number of raters of an item, the item count and the sums of each label's count, of its square and of the products
  of two labels' counts (Fleiss' kappa and Krippendorff's coincidences come from those);
- in the "all sentence pairs" scope, the pairs nobody labelled are not listed at all: per set of annotators who marked a
  document pair done, the number of its sentence pairs none of its annotators labelled (each is "not aligned" for each
  of them) is added to the sums at the end;
- per annotator, the confusion of their shown-scope ratings with the aligner's candidates, and the aligner's labels,
  for P/R/F1 against the aligner.

The ratings are :func:`agreement_data.project_ratings`' (tests/annotation/adjudication/test_agreement_sql.py checks
that both give the same figures): an annotator's current labels on a document pair assigned to them; where they
marked the pair done, every shown (or, in the other scope, every) sentence pair they left unlabelled is "not aligned".
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from django.contrib.auth import get_user_model
from django.db import connection

from annotation.adjudication.agreement import (
    LINKED_LABELS_BY_TASK,
    PRF,
    SCOPE_ALL_PAIRS,
    SCOPE_SHOWN,
    AgreementReport,
    prf_from_confusion,
    prf_from_counts,
)
from annotation.export.agreement_counts import AgreementCounts
from annotation.models import AnnotationProject, Assignment
from models_ml.labels import LABELS, NOT_ALIGNED

_N = ", ".join(f"count(*) FILTER (WHERE label = '{label}') AS n{k}" for k, label in enumerate(LABELS))  # labels are fixed words
_SUMS = ", ".join(
    [f"sum(n{k})::bigint" for k in range(len(LABELS))]
    + [f"sum(n{a} * n{b})::bigint" for a in range(len(LABELS)) for b in range(a, len(LABELS))]
)
_SQL = f"""
    WITH assigned AS (
        SELECT a.pair_id, a.annotator_id, a.completed_at IS NOT NULL AS done
        FROM annotation_assignment a
        JOIN annotation_annotationproject_pairs pp ON pp.annotationproject_id = a.project_id AND pp.documentpair_id = a.pair_id
        WHERE a.project_id = %(project)s
    ), own AS (
        SELECT latest.annotator_id, latest.pair_id, latest.simple_sentence_id AS simple_id, latest.complex_sentence_id AS complex_id,
               latest.new_label AS label
        FROM (
            SELECT DISTINCT ON (e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id)
                   e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.new_label
            FROM annotation_labelevent e
            WHERE e.project_id = %(project)s AND e.source <> 'adjudication'
            ORDER BY e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.id DESC
        ) latest
        JOIN assigned ON assigned.annotator_id = latest.annotator_id AND assigned.pair_id = latest.pair_id
        WHERE latest.new_label <> ''
    ), aligner AS (
        SELECT c.pair_id, c.simple_sentence_id AS simple_id, c.complex_sentence_id AS complex_id, c.label
        FROM alignment_candidatealignment c
        JOIN annotation_annotationproject_pairs pp ON pp.annotationproject_id = %(project)s AND pp.documentpair_id = c.pair_id
        WHERE c.run_id = %(run)s
    ), explicit_items AS (
        SELECT DISTINCT pair_id, simple_id, complex_id FROM own
    ), shown_items AS (
        SELECT pair_id, simple_id, complex_id FROM aligner UNION SELECT pair_id, simple_id, complex_id FROM explicit_items
    ), rated AS (
        SELECT scope, i.simple_id, i.complex_id, assigned.annotator_id, coalesce(own.label, '{NOT_ALIGNED}') AS label
        FROM (SELECT 'shown' AS scope, * FROM shown_items UNION ALL SELECT 'all', * FROM explicit_items) i
        JOIN assigned ON assigned.pair_id = i.pair_id
        LEFT JOIN own ON own.annotator_id = assigned.annotator_id AND own.pair_id = i.pair_id
                     AND own.simple_id = i.simple_id AND own.complex_id = i.complex_id
        WHERE own.label IS NOT NULL OR assigned.done
    ), per_item AS (
        SELECT scope, count(*) AS raters, {_N} FROM rated GROUP BY scope, simple_id, complex_id
    ), unlabelled AS (
        SELECT p.id AS pair_id,
               (SELECT count(*) FROM alignment_sentence s WHERE s.document_id = p.simple_document_id)
               * (SELECT count(*) FROM alignment_sentence s WHERE s.document_id = p.complex_document_id)
               - coalesce(explicit.items, 0) AS items
        FROM annotation_annotationproject_pairs pp JOIN alignment_documentpair p ON p.id = pp.documentpair_id
        LEFT JOIN (SELECT pair_id, count(*) AS items FROM explicit_items GROUP BY pair_id) explicit ON explicit.pair_id = p.id
        WHERE pp.annotationproject_id = %(project)s
    ), done_sets AS (
        SELECT pair_id, array_agg(annotator_id ORDER BY annotator_id) AS annotators FROM assigned WHERE done GROUP BY pair_id
    )
    SELECT 'labels', scope, annotator_id, NULL::bigint, label, NULL, ARRAY[count(*)] FROM rated GROUP BY scope, annotator_id, label
    UNION ALL
    SELECT 'confusion', a.scope, a.annotator_id, b.annotator_id, a.label, b.label, ARRAY[count(*)]
    FROM rated a JOIN rated b ON b.scope = a.scope AND b.simple_id = a.simple_id AND b.complex_id = a.complex_id
                              AND b.annotator_id > a.annotator_id
    GROUP BY a.scope, a.annotator_id, b.annotator_id, a.label, b.label
    UNION ALL
    SELECT 'items', scope, raters, NULL, NULL, NULL, ARRAY[count(*)::bigint, {_SUMS}] FROM per_item GROUP BY scope, raters
    UNION ALL
    SELECT 'unlabelled', 'all', NULL, NULL, array_to_string(done_sets.annotators, ','), NULL, ARRAY[sum(unlabelled.items)::bigint]
    FROM done_sets JOIN unlabelled ON unlabelled.pair_id = done_sets.pair_id GROUP BY done_sets.annotators
    UNION ALL
    SELECT 'aligner', 'shown', rated.annotator_id, NULL, rated.label, aligner.label, ARRAY[count(*)]
    FROM rated JOIN aligner ON aligner.simple_id = rated.simple_id AND aligner.complex_id = rated.complex_id
    WHERE rated.scope = 'shown'
    GROUP BY rated.annotator_id, rated.label, aligner.label
    UNION ALL
    SELECT 'aligner labels', 'shown', NULL, NULL, label, NULL, ARRAY[count(*)] FROM aligner GROUP BY label
"""
_CODE = {label: index for index, label in enumerate(LABELS)}
_NA = _CODE[NOT_ALIGNED]
_SCOPES = {"shown": SCOPE_SHOWN, "all": SCOPE_ALL_PAIRS}


@dataclass(frozen=True)
class AgreementTotals:
    """The project-wide half of :class:`agreement_data.ProjectAgreement` (its per-pair rows come a page at a time)."""

    shown: AgreementReport
    all_pairs: AgreementReport
    pairwise: dict[tuple[str, str], PRF]
    versus_aligner: dict[str, PRF]
    pairwise_all_items: dict[tuple[str, str], PRF]
    versus_aligner_all_items: dict[str, PRF]


def agreement_totals(project: AnnotationProject) -> AgreementTotals:
    """Every project-wide figure of the agreement dashboard, from two queries (the roster and the sums)."""
    username = get_user_model().USERNAME_FIELD
    roster = dict(
        Assignment.objects.filter(project=project, pair__in=project.pairs.all())
        .order_by()
        .values_list("annotator_id", f"annotator__{username}")
        .distinct()
    )
    counts = {scope: AgreementCounts() for scope in _SCOPES}
    aligner: dict[str, list[list[int]]] = {}  # annotator -> their shown label x the aligner's label, items both rated
    aligner_labels = [0] * len(LABELS)
    with connection.cursor() as cursor:
        cursor.execute(_SQL, {"project": project.pk, "run": project.suggestion_run_id})
        for kind, scope, first, second, label, other, numbers in cursor.fetchall():
            if kind == "labels":
                counts[scope].label_counts.setdefault(roster[first], [0] * len(LABELS))[_CODE[label]] += numbers[0]
            elif kind == "confusion":
                _confusion_add(counts[scope], roster[first], roster[second], label, other, numbers[0])
            elif kind == "items":
                _items_add(counts[scope], first, numbers)
            elif kind == "unlabelled":
                _unlabelled_add(counts[scope], [roster[int(pk)] for pk in label.split(",")], numbers[0])
            elif kind == "aligner":
                aligner.setdefault(roster[first], _zeros())[_CODE[label]][_CODE[other]] += numbers[0]
            else:
                aligner_labels[_CODE[label]] += numbers[0]
    names = sorted(roster.values())
    shown = counts["shown"].report(scope=SCOPE_SHOWN, roster=names)
    return AgreementTotals(
        shown=shown,
        all_pairs=counts["all"].report(scope=SCOPE_ALL_PAIRS, roster=names),
        pairwise={pair: prf_from_confusion(matrix) for pair, matrix in shown.confusion_matrices.items()},
        pairwise_all_items={(a, b): _prf_all_items(shown, a, b) for a, b in combinations(names, 2)},
        versus_aligner={name: _versus_aligner(shown, name, aligner.get(name, _zeros()), None) for name in names}
        if any(aligner_labels)
        else {},
        versus_aligner_all_items=(
            {name: _versus_aligner(shown, name, aligner.get(name, _zeros()), aligner_labels) for name in names}
            if any(aligner_labels)
            else {}
        ),
    )


def _zeros() -> list[list[int]]:
    return [[0] * len(LABELS) for _ in LABELS]


def _confusion_add(counts: AgreementCounts, a: str, b: str, label_a: str, label_b: str, number: int) -> None:
    """Rows are the first name's labels in name order (the query orders the two by id)."""
    if a > b:
        a, b, label_a, label_b = b, a, label_b, label_a
    counts.confusion.setdefault((a, b), _zeros())[_CODE[label_a]][_CODE[label_b]] += number


def _items_add(counts: AgreementCounts, raters: int, numbers: list[int]) -> None:
    """``numbers``: items with ``raters`` ratings, the sum of each label's count, then of each product n_a * n_b (a <= b)."""
    size = len(LABELS)
    items, totals, products = numbers[0], numbers[1 : 1 + size], iter(numbers[1 + size :])
    product = _zeros()
    for a in range(size):
        for b in range(a, size):
            product[a][b] = product[b][a] = next(products)
    fleiss = counts.fleiss.setdefault(raters, [0] * (2 + size))
    fleiss[0] += items
    fleiss[1] += sum(product[c][c] for c in range(size))
    for c in range(size):
        fleiss[2 + c] += totals[c]
    if raters >= 2:
        counts.pairable_items += items
        matrix = counts.coincidence.setdefault(raters, _zeros())
        for c in range(size):
            counts.pairable_values[c] += totals[c]
            for k in range(size):
                matrix[c][k] += product[c][k] - (totals[c] if c == k else 0)


def _unlabelled_add(counts: AgreementCounts, done: list[str], items: int) -> None:
    """``items`` sentence pairs nobody labelled, each rated "not aligned" by every annotator in ``done``."""
    raters = len(done)
    if not items or not raters:
        return
    for name in done:
        counts.label_counts.setdefault(name, [0] * len(LABELS))[_NA] += items
    for a, b in combinations(sorted(done), 2):
        counts.confusion.setdefault((a, b), _zeros())[_NA][_NA] += items
    totals, product = [0] * len(LABELS), [0] * (len(LABELS) * (len(LABELS) + 1) // 2)
    totals[_NA] = raters * items
    product[_square_index(_NA)] = raters * raters * items
    _items_add(counts, raters, [items, *totals, *product])


def _square_index(label: int) -> int:
    """Where n_label * n_label sits among the products n_a * n_b, a <= b, in row order."""
    size = len(LABELS)
    return sum(size - a for a in range(label))


def _linked(counts_by_label: list[int]) -> int:
    return sum(count for label, count in zip(LABELS, counts_by_label, strict=True) if label in LINKED_LABELS_BY_TASK[1])


def _prf_all_items(report: AgreementReport, a: str, b: str) -> PRF:
    """``pairwise_alignment_prf(scope=PRF_ALL)``: a's links against b's over every item either rated."""
    both = prf_from_confusion(report.confusion(a, b))
    linked_a, linked_b = _linked(list(report.label_counts[a].values())), _linked(list(report.label_counts[b].values()))
    rated = sum(report.label_counts[a].values()) + sum(report.label_counts[b].values()) - both.items
    return prf_from_counts(both.tp, linked_b - both.tp, linked_a - both.tp, rated)


def _versus_aligner(report: AgreementReport, name: str, matrix: list[list[int]], aligner_labels: list[int] | None) -> PRF:
    """``aligner_alignment_prf``: the aligner's links against ``name``'s, over the items ``name`` rated (``aligner_labels``
    None) or, as ``PRF_ALL``, also the aligner's links on items ``name`` never rated."""
    linked = [label in LINKED_LABELS_BY_TASK[1] for label in LABELS]
    tp = sum(matrix[i][j] for i in range(len(LABELS)) for j in range(len(LABELS)) if linked[i] and linked[j])
    own = list(report.label_counts[name].values())
    rated, fn = sum(own), _linked(own) - tp
    if aligner_labels is None:
        fp = sum(matrix[i][j] for i in range(len(LABELS)) for j in range(len(LABELS)) if not linked[i] and linked[j])
        return prf_from_counts(tp, fp, fn, rated)
    both = sum(map(sum, matrix))
    return prf_from_counts(tp, _linked(aligner_labels) - tp, fn, rated + sum(aligner_labels) - both)
