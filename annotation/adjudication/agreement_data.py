"""Ratings for the agreement dashboard, built from the label history (reads only).

Scopes (both always shown, and named, because they give very different numbers):
- "shown candidates": the sentence pairs the aligner proposed for the document pair plus
  every pair any annotator labelled; an annotator who marked the pair done counts the
  shown pairs they left unlabelled as not aligned.
- "all sentence pairs": every (simple, complex) pair of the document pair; unlabelled
  pairs count as not aligned for annotators who marked the pair done. The mass of
  trivially not-aligned pairs inflates agreement here.
Annotators who have not marked a pair done contribute only their explicit labels.

P/R/F1 between two annotators is over the items both labelled (INCEpTION's pairwise scope, the items
their Cohen's kappa uses), against the aligner over the items the annotator labelled; the figure over
all items (an item one side did not label counting as no link) is kept beside it as ``*_all_items``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from alignment.models import CandidateAlignment, DocumentPair, Sentence
from annotation.adjudication.agreement import (
    PRF,
    PRF_ALL,
    SCOPE_ALL_PAIRS,
    SCOPE_SHOWN,
    AgreementReport,
    agreement_report,
    aligner_alignment_prf,
    pairwise_alignment_prf,
)
from annotation.adjudication.agreement_sql import AgreementTotals, agreement_totals_cached
from annotation.export.agreement_counts import AgreementCounts
from annotation.labels import NOT_ALIGNED, latest_label_events
from annotation.models import AnnotationProject, Assignment

Item = tuple[int, int]  # (simple sentence id, complex sentence id)


@dataclass
class PairRatings:
    pair: DocumentPair
    shown: dict[str, dict[Item, str]] = field(default_factory=dict)
    aligner: dict[Item, str] = field(default_factory=dict)
    explicit: dict[str, dict[Item, str]] = field(default_factory=dict)  # each assigned annotator's own labels
    done: dict[str, bool] = field(default_factory=dict)  # whether they marked the pair done
    sentences: tuple[list[int], list[int]] = ([], [])  # the pair's simple and complex sentence ids

    @property
    def all_pairs(self) -> dict[str, dict[Item, str]]:
        """Every (simple, complex) pair rated: an annotator's own label, else not aligned once they marked the pair done."""
        simple_ids, complex_ids = self.sentences
        every = dict.fromkeys(((s, c) for s in simple_ids for c in complex_ids), NOT_ALIGNED)
        return {name: {**every, **own} if self.done[name] else dict(own) for name, own in self.explicit.items()}


def _explicit_labels(project: AnnotationProject, pair_ids: list[int]) -> dict[tuple[int, int], dict[Item, str]]:
    """(annotator id, pair id) -> item -> current non-empty label, for the pairs ``pair_ids``."""
    latest = latest_label_events(project, pair_id__in=pair_ids).values_list(
        "annotator_id", "pair_id", "simple_sentence_id", "complex_sentence_id", "new_label"
    )
    labels: dict[tuple[int, int], dict[Item, str]] = {}
    for annotator_id, pair_id, simple_id, complex_id, label in latest:
        if label:
            labels.setdefault((annotator_id, pair_id), {})[(simple_id, complex_id)] = label
    return labels


def project_ratings(project: AnnotationProject, pairs: Iterable[DocumentPair]) -> list[PairRatings]:
    """The ratings of each of ``pairs`` (document pairs of the project), in five queries however many pairs."""
    pairs = list(pairs)
    pair_ids = [pair.pk for pair in pairs]
    explicit = _explicit_labels(project, pair_ids)
    by_pair: dict[int, list[Assignment]] = {}
    for assignment in Assignment.objects.filter(project=project, pair_id__in=pair_ids).select_related("annotator").order_by("pk"):
        by_pair.setdefault(assignment.pair_id, []).append(assignment)
    aligner: dict[int, dict[Item, str]] = {}
    if project.suggestion_run_id:
        candidates = CandidateAlignment.objects.filter(run_id=project.suggestion_run_id, pair_id__in=pair_ids).order_by("pk")
        for pair_id, simple_id, complex_id, label in candidates.values_list(
            "pair_id", "simple_sentence_id", "complex_sentence_id", "label"
        ):
            aligner.setdefault(pair_id, {})[(simple_id, complex_id)] = label
    documents = {d for pair in pairs for d in (pair.simple_document_id, pair.complex_document_id)}
    sentences: dict[int, list[int]] = {}
    for document_id, pk in (
        Sentence.objects.filter(document_id__in=documents).order_by("document_id", "index").values_list("document_id", "pk")
    ):
        sentences.setdefault(document_id, []).append(pk)
    result = []
    for pair in pairs:
        ratings = PairRatings(pair=pair, aligner=aligner.get(pair.pk, {}))
        pair_assignments = by_pair.get(pair.pk, [])
        shown = set(ratings.aligner)
        for assignment in pair_assignments:
            shown |= set(explicit.get((assignment.annotator_id, pair.pk), {}))
        ratings.sentences = (sentences.get(pair.simple_document_id, []), sentences.get(pair.complex_document_id, []))
        for assignment in pair_assignments:
            name = assignment.annotator.get_username()
            own = explicit.get((assignment.annotator_id, pair.pk), {})
            done = assignment.completed_at is not None
            ratings.explicit[name], ratings.done[name] = own, done
            ratings.shown[name] = {**{item: NOT_ALIGNED for item in shown}, **own} if done else dict(own)
        result.append(ratings)
    return result


@dataclass
class ProjectAgreement:
    shown: AgreementReport
    all_pairs: AgreementReport
    pairwise: dict[tuple[str, str], PRF]  # over the items both labelled (shown-candidates scope)
    versus_aligner: dict[str, PRF]  # over the items the annotator labelled
    pairwise_all_items: dict[tuple[str, str], PRF]  # over every item either labelled
    versus_aligner_all_items: dict[str, PRF]  # also the aligner's links on items the annotator did not label
    per_pair: list[tuple[DocumentPair, AgreementReport, AgreementReport]]  # the pairs asked for (a page of them)

    @property
    def prf_rows(self) -> list[tuple[str, str, PRF, PRF]]:
        """(reference, compared, P/R/F1 in the page's scope, F1 over all items): annotator pairs, then the aligner."""
        rows = [(a, b, prf, self.pairwise_all_items[(a, b)]) for (a, b), prf in self.pairwise.items()]
        return rows + [(name, "the aligner", prf, self.versus_aligner_all_items[name]) for name, prf in self.versus_aligner.items()]


def _merged(parts: list[dict[str, dict[Item, str]]]) -> dict[str, dict[Item, str]]:
    merged: dict[str, dict[Item, str]] = {}
    for part in parts:
        for name, labels in part.items():
            merged.setdefault(name, {}).update(labels)  # items are sentence ids: unique across pairs
    return merged


def _report(ratings: dict[str, dict[Item, str]], scope: str) -> AgreementReport:
    """:func:`agreement_report` from running counts: the same figures in a fraction of the time for a pair's few items.

    Items rated alike are added once with their count (a pair of 60 x 60 sentences has hundreds of items but a
    handful of patterns of ratings: adding item by item took 1.5 s for a page of 50 such pairs)."""
    counts = AgreementCounts()
    names = list(ratings)
    items = {item for labels in ratings.values() for item in labels}
    patterns = Counter(tuple(ratings[name].get(item) for name in names) for item in items)
    for pattern, weight in patterns.items():
        counts.add(pattern, dict(zip(names, pattern)), weight=weight)
    return counts.report(scope=scope, roster=ratings)


def _report_all_pairs(ratings: PairRatings) -> AgreementReport:
    """:func:`_report` of ``ratings.all_pairs`` without making it: the items nobody labelled are all rated alike (not
    aligned by those who marked the pair done), so they are added as one pattern with their count. A page of 50 pairs of
    28 x 28 sentences spent most of its 240 ms making and reading those 78,400 ratings one by one."""
    names = list(ratings.explicit)
    labelled = {item for own in ratings.explicit.values() for item in own}
    patterns = Counter(
        tuple(ratings.explicit[name].get(item, NOT_ALIGNED if ratings.done[name] else None) for name in names) for item in labelled
    )
    simple_ids, complex_ids = ratings.sentences
    rest = len(simple_ids) * len(complex_ids) - len(labelled)  # labelled items are sentence pairs of the pair
    if rest > 0 and any(ratings.done.values()):
        patterns[tuple(NOT_ALIGNED if ratings.done[name] else None for name in names)] += rest
    counts = AgreementCounts()
    for pattern, weight in patterns.items():
        counts.add(pattern, dict(zip(names, pattern)), weight=weight)
    return counts.report(scope=SCOPE_ALL_PAIRS, roster=names)


def pair_agreement_rows(
    project: AnnotationProject, pairs: Iterable[DocumentPair]
) -> list[tuple[DocumentPair, AgreementReport, AgreementReport]]:
    """Each pair with its agreement in both scopes: the dashboard's per-pair table, for a page of pairs."""
    return [(p.pair, _report(p.shown, SCOPE_SHOWN), _report_all_pairs(p)) for p in project_ratings(project, pairs)]


def project_agreement(project: AnnotationProject, *, pairs: Iterable[DocumentPair] = ()) -> ProjectAgreement:
    """The dashboard: every project-wide figure counted in PostgreSQL (:mod:`agreement_sql`, cached until the labels
    change), and the per-pair rows of ``pairs``."""
    totals = agreement_totals_cached(project)
    return ProjectAgreement(**vars(totals), per_pair=pair_agreement_rows(project, pairs))


def agreement_totals_in_python(project: AnnotationProject) -> AgreementTotals:
    """:func:`agreement_sql.agreement_totals` from every rating in Python, as the dashboard computed it before: the
    reference the SQL is tested against. Reads every pair's ratings, so not for pages."""
    pairs = project_ratings(project, project.pairs.select_related("complex_document", "simple_document").order_by("pk"))
    shown = _merged([p.shown for p in pairs])
    aligner = {item: label for p in pairs for item, label in p.aligner.items()}
    return AgreementTotals(
        shown=agreement_report(shown, scope=SCOPE_SHOWN),
        all_pairs=agreement_report(_merged([p.all_pairs for p in pairs]), scope=SCOPE_ALL_PAIRS),
        pairwise=pairwise_alignment_prf(shown),
        versus_aligner=aligner_alignment_prf(shown, aligner) if aligner else {},
        pairwise_all_items=pairwise_alignment_prf(shown, scope=PRF_ALL),
        versus_aligner_all_items=aligner_alignment_prf(shown, aligner, scope=PRF_ALL) if aligner else {},
    )
