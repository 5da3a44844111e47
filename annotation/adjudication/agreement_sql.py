"""The agreement dashboard's project-wide figures, counted in PostgreSQL: one query however many pairs and labels.

:mod:`annotation.adjudication.agreement_data` builds every rating in Python (annotator -> item -> label), per document
pair; over a whole project that is every label plus, in the "all sentence pairs" scope, every sentence pair of every
document pair. Each measure only needs sums over items, though (:mod:`annotation.export.agreement_counts`), and items
rated alike add the same to every sum. So PostgreSQL builds the same ratings and counts the items per *pattern* of
ratings (who gave which label, and the aligner's label): a few dozen rows, whatever the project's size, which fill an
:class:`AgreementCounts` per scope with a weight each. Only the labelled items are read one by one (they are rated
alike in both scopes); an item nobody labelled is rated "not aligned" by each annotator who marked its pair done, so
the aligner's other items (shown) and every other sentence pair (all) are counted per pair and set of done annotators.

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
from annotation.selectors import project_cached
from models_ml.labels import LABELS, NOT_ALIGNED

_DIGIT = " ".join(f"WHEN '{label}' THEN {digit}" for digit, label in enumerate(LABELS, start=1))  # labels are fixed words
_NA = LABELS.index(NOT_ALIGNED) + 1
_BIGINT_RATERS = 31  # 4 ** 31 = 2 ** 62: up to 31 annotators a pattern fits a bigint, which PostgreSQL sums faster than numeric
_SQL = f"""
    WITH assigned AS (
        SELECT a.pair_id, a.annotator_id, a.completed_at IS NOT NULL AS done
        FROM annotation_assignment a
        JOIN annotation_annotationproject_pairs pp ON pp.annotationproject_id = a.project_id AND pp.documentpair_id = a.pair_id
        WHERE a.project_id = %(project)s
    ), raters AS (  -- each annotator's digit in a pattern: 4 ** their rank among the project's annotators, by id
        SELECT annotator_id, (power(4::numeric, dense_rank() OVER (ORDER BY annotator_id) - 1))::{{unit}} AS unit
        FROM (SELECT DISTINCT annotator_id FROM assigned) annotators
    ), done_sets AS (  -- per pair, the pattern of an item nobody labelled: "not aligned" from each annotator who marked it done
        SELECT assigned.pair_id, sum(raters.unit * {_NA}) AS pattern
        FROM assigned JOIN raters ON raters.annotator_id = assigned.annotator_id WHERE assigned.done GROUP BY assigned.pair_id
    ), own AS (
        SELECT latest.pair_id, latest.simple_sentence_id AS simple_id, latest.complex_sentence_id AS complex_id, latest.new_label AS label,
               assigned.done, raters.unit
        FROM (
            SELECT DISTINCT ON (e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id)
                   e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.new_label
            FROM annotation_labelevent e
            WHERE e.project_id = %(project)s AND e.source <> 'adjudication'
            ORDER BY e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.id DESC
        ) latest
        JOIN assigned ON assigned.annotator_id = latest.annotator_id AND assigned.pair_id = latest.pair_id
        JOIN raters ON raters.annotator_id = latest.annotator_id
        WHERE latest.new_label <> ''
    ), labelled AS (  -- per item some assigned annotator labels, its own labels' part of the pattern (a done annotator's
                      -- "not aligned" for it, which the pair's done set adds, taken back where they labelled it)
        SELECT pair_id, simple_id, complex_id,
               sum(unit * (CASE label {_DIGIT} END - CASE WHEN done THEN {_NA} ELSE 0 END)) AS own_part
        FROM own GROUP BY pair_id, simple_id, complex_id
    ), aligner AS (
        SELECT c.pair_id, c.simple_sentence_id AS simple_id, c.complex_sentence_id AS complex_id, c.label
        FROM alignment_candidatealignment c
        JOIN annotation_annotationproject_pairs pp ON pp.annotationproject_id = %(project)s AND pp.documentpair_id = c.pair_id
        WHERE c.run_id = %(run)s
    ), pairs AS (
        SELECT p.id AS pair_id, p.simple_document_id, p.complex_document_id, done_sets.pattern, coalesce(counted.items, 0) AS labelled
        FROM done_sets JOIN alignment_documentpair p ON p.id = done_sets.pair_id
        LEFT JOIN (SELECT pair_id, count(*) AS items FROM labelled GROUP BY pair_id) counted ON counted.pair_id = p.id
    )
    SELECT 'labelled', labelled.own_part + coalesce(done_sets.pattern, 0), aligner.label, count(*)
    FROM labelled
    LEFT JOIN done_sets ON done_sets.pair_id = labelled.pair_id
    LEFT JOIN aligner ON aligner.pair_id = labelled.pair_id AND aligner.simple_id = labelled.simple_id
                     AND aligner.complex_id = labelled.complex_id
    GROUP BY 2, 3
    UNION ALL  -- the aligner's items nobody labels: shown, so rated "not aligned" by those done with the pair
    SELECT 'shown', done_sets.pattern, aligner.label, count(*)
    FROM aligner JOIN done_sets ON done_sets.pair_id = aligner.pair_id
    WHERE NOT EXISTS (SELECT 1 FROM labelled WHERE labelled.pair_id = aligner.pair_id AND labelled.simple_id = aligner.simple_id
                                              AND labelled.complex_id = aligner.complex_id)
    GROUP BY 2, 3
    UNION ALL  -- every other sentence pair of a pair: in the "all sentence pairs" scope only
    SELECT 'all', pattern, NULL, sum(
        (SELECT count(*) FROM alignment_sentence s WHERE s.document_id = pairs.simple_document_id AND s.retired_by_id IS NULL)
        * (SELECT count(*) FROM alignment_sentence s WHERE s.document_id = pairs.complex_document_id AND s.retired_by_id IS NULL) - pairs.labelled
    )::bigint
    FROM pairs GROUP BY 2
    UNION ALL
    SELECT 'aligner', NULL, label, count(*) FROM aligner GROUP BY label
"""
_CODE = {label: index for index, label in enumerate(LABELS)}
_SCOPES = {"shown": SCOPE_SHOWN, "all": SCOPE_ALL_PAIRS}
_SCOPES_OF = {"labelled": ("shown", "all"), "shown": ("shown",), "all": ("all",)}  # the scopes each kind of row counts in


@dataclass(frozen=True)
class AgreementTotals:
    """The project-wide half of :class:`agreement_data.ProjectAgreement` (its per-pair rows come a page at a time)."""

    shown: AgreementReport
    all_pairs: AgreementReport
    pairwise: dict[tuple[str, str], PRF]
    versus_aligner: dict[str, PRF]
    pairwise_all_items: dict[tuple[str, str], PRF]
    versus_aligner_all_items: dict[str, PRF]


def agreement_totals_cached(project: AnnotationProject, *, fresh: bool = False) -> AgreementTotals:
    """:func:`agreement_totals`, kept in the cache until a label, an assignment, the project's pairs, its suggestion run
    or an annotator's name changes (:func:`annotation.selectors.project_cached`): a dashboard opened again, or paged
    through, costs three small queries."""
    roster = _roster(project)
    run = project.suggestion_run
    depends_on = (sorted(roster.items()), (run.pk, run.status, run.candidates_written) if run is not None else None)
    return project_cached(
        project, "agreement", lambda: agreement_totals(project, roster=roster), extra=depends_on,
        recount=f"{__name__}.agreement_recount", fresh=fresh,
    )  # fmt: skip


def agreement_recount(project: AnnotationProject, _arg: int | None) -> None:
    """The background recount of :func:`agreement_totals_cached`."""
    agreement_totals_cached(project, fresh=True)


def _roster(project: AnnotationProject) -> dict[int, str]:
    """Annotator id -> name, of everyone assigned a pair of the project."""
    username = get_user_model().USERNAME_FIELD
    return dict(
        Assignment.objects.filter(project=project, pair__in=project.pairs.all())
        .order_by()
        .values_list("annotator_id", f"annotator__{username}")
        .distinct()
    )


def agreement_totals(project: AnnotationProject, *, roster: dict[int, str] | None = None) -> AgreementTotals:
    """Every project-wide figure of the agreement dashboard, from two queries (the roster, unless given, and the patterns)."""
    roster = _roster(project) if roster is None else roster
    names_by_rank = [roster[pk] for pk in sorted(roster)]
    counts = {scope: AgreementCounts() for scope in _SCOPES}
    aligner: dict[str, list[list[int]]] = {}  # annotator -> their shown label x the aligner's label, items both rated
    aligner_labels = [0] * len(LABELS)
    with connection.cursor() as cursor:
        unit = "bigint" if len(roster) <= _BIGINT_RATERS else "numeric"  # a pattern is a number of len(roster) base-4 digits
        cursor.execute(_SQL.replace("{unit}", unit), {"project": project.pk, "run": project.suggestion_run_id})
        for kind, ratings, aligner_label, items in cursor.fetchall():
            if kind == "aligner":
                aligner_labels[_CODE[aligner_label]] += items
                continue
            given = _decoded(int(ratings), names_by_rank)
            for scope in _SCOPES_OF[kind]:
                counts[scope].add((kind, ratings), given, weight=items)
            for name, label in given.items() if kind != "all" and aligner_label else ():
                aligner.setdefault(name, _zeros())[_CODE[label]][_CODE[aligner_label]] += items
    names = sorted(roster.values())
    shown = counts["shown"].report(scope=SCOPE_SHOWN, roster=names)
    with_aligner = any(aligner_labels)
    return AgreementTotals(
        shown=shown,
        all_pairs=counts["all"].report(scope=SCOPE_ALL_PAIRS, roster=names),
        pairwise={pair: prf_from_confusion(matrix) for pair, matrix in shown.confusion_matrices.items()},
        pairwise_all_items={(a, b): _prf_all_items(shown, a, b) for a, b in combinations(names, 2)},
        versus_aligner={name: _versus_aligner(shown, name, aligner.get(name, _zeros()), None) for name in names} if with_aligner else {},
        versus_aligner_all_items=(
            {name: _versus_aligner(shown, name, aligner.get(name, _zeros()), aligner_labels) for name in names} if with_aligner else {}
        ),
    )


def _decoded(pattern: int, names_by_rank: list[str]) -> dict[str, str]:
    """A pattern's ratings: its base-4 digit for the annotator of each rank is 0 (none) or a label's place in LABELS, from 1."""
    given = {}
    for name in names_by_rank:
        pattern, digit = divmod(pattern, 4)
        if digit:
            given[name] = LABELS[digit - 1]
    return given


def _zeros() -> list[list[int]]:
    return [[0] * len(LABELS) for _ in LABELS]


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
