"""Which labels an export holds, one document pair at a time, with everything known about each label.

What goes in (the same rules as training snapshots, :func:`annotation.training.snapshot.gold_items`,
plus adjudications and the optional majority):

- a *verified* document pair: every labelled sentence pair with its final label (status
  ``verified``);
- a pair that is not verified: sentence pairs a reviewer adjudicated (``adjudicated``), and
  the latest imported labels (``imported``), as training counts imported gold;
- with ``include_majority``: in pairs that are not verified, sentence pairs that are neither,
  where more than half of the (unflagged) annotators assigned the pair gave the same label
  (``majority``, flagged as such in every format).

A pair is *complete* when it is verified or holds imported gold: its sentence pairs nobody
linked are then known to be not aligned, which the Wiki-Manual TSV writes out as notAligned
rows. Items are streamed per document pair in primary-key order, sorted by sentence index,
so memory holds one pair at a time and every export of the same state comes out the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from alignment.models import CandidateAlignment, DocumentPair, Sentence
from annotation.models import AnnotationProject, LabelEvent, PairVerification
from annotation.review import pair_item_states
from annotation.selectors import latest_label_events

STATUSES = ("verified", "adjudicated", "imported", "majority")


class ExportDataError(ValueError):
    """The project has nothing that an export could hold; the message says what is missing."""


@dataclass(frozen=True)
class SentenceRow:
    pk: int
    index: int
    paragraph: int
    index_in_paragraph: int
    text: str  # whitespace normalised: one line, no tabs


@dataclass
class ExportItem:
    simple: SentenceRow
    complex: SentenceRow
    label: str  # aligned | partial | not_aligned
    status: str  # one of STATUSES
    annotations: list[dict]  # every annotator's latest own event on the item
    labels: dict[str, str | None]  # annotator -> label as review sees it (implicit not_aligned for pairs marked done)
    adjudication: dict | None
    aligner: dict | None


@dataclass
class PairExport:
    pair_id: int
    complex_article: str
    complex_level: str
    simple_article: str
    simple_level: str
    complex_sentences: list[SentenceRow]
    simple_sentences: list[SentenceRow]
    complete: bool
    verification: dict | None
    items: list[ExportItem] = field(default_factory=list)


def _iso(moment) -> str:
    return moment.isoformat() if moment is not None else ""


def clean_text(text: str) -> str:
    return " ".join(text.split())


def candidate_pair_ids(project: AnnotationProject, *, include_majority: bool) -> list[int]:
    """Document pairs that may hold exported labels, by pk (cheap: a few queries for the whole project).

    The split is assigned over these before streaming, so it is known when each pair is written.
    """
    pair_ids = set(project.pairs.values_list("pk", flat=True))
    latest = (
        PairVerification.objects.filter(project=project).order_by("pair_id", "-pk").distinct("pair_id").values_list("pair_id", "verified")
    )
    chosen = {pair_id for pair_id, verified in latest if verified}
    events = LabelEvent.objects.filter(project=project)
    if not include_majority:
        events = events.filter(source__in=(LabelEvent.Source.ADJUDICATION, LabelEvent.Source.IMPORT))
    chosen |= set(events.values_list("pair_id", flat=True).distinct())
    return sorted(chosen & pair_ids)


def _sentences(*document_ids: int) -> list[list[SentenceRow]]:
    """The sentences of each document, by index (one query for all of them)."""
    by_document: dict[int, list[SentenceRow]] = {document_id: [] for document_id in document_ids}
    rows = Sentence.objects.filter(document_id__in=document_ids).order_by("document_id", "index").values_list(
        "document_id", "pk", "index", "paragraph__index", "index_in_paragraph", "text"
    )
    for document_id, pk, index, paragraph, in_paragraph, text in rows:
        by_document[document_id].append(SentenceRow(pk, index, paragraph, in_paragraph, clean_text(text)))
    return [by_document[document_id] for document_id in document_ids]


def _aligner(project: AnnotationProject, pair_id: int) -> dict[tuple[int, int], dict]:
    run = project.suggestion_run
    if run is None:
        return {}
    rows = CandidateAlignment.objects.filter(run=run, pair_id=pair_id).values_list(
        "simple_sentence_id", "complex_sentence_id", "scores", "score", "crf_marginal", "label", "group_index"
    )
    return {
        (simple_id, complex_id): {
            "run_id": run.pk, "model_version": run.model_version, "measure": run.primary_measure,
            "scores": {name: scores[name] for name in sorted(scores)}, "score": score, "crf_marginal": marginal,
            "predicted_label": label, "group_index": group,
        }
        for simple_id, complex_id, scores, score, marginal, label, group in rows
    }  # fmt: skip


def _majority(labels: dict[str, str | None]) -> str | None:
    given = Counter(label for label in labels.values() if label)
    if not given:
        return None
    label, count = max(sorted(given.items()), key=lambda entry: entry[1])
    return label if 2 * count > len(labels) else None


def _latest_verifications(project: AnnotationProject, pair_ids: list[int]) -> dict[int, PairVerification]:
    """Each pair's latest verification row (verified or withdrawn), one query for a page of pairs."""
    rows = (
        PairVerification.objects.filter(project=project, pair_id__in=pair_ids).select_related("by").order_by("pair_id", "-pk").distinct("pair_id")
    )
    return {row.pair_id: row for row in rows}


def _usernames(user_ids: set[int]) -> dict[int, str]:
    if not user_ids:
        return {}
    return {user.pk: user.get_username() for user in get_user_model().objects.filter(pk__in=user_ids)}


def pair_export(
    project: AnnotationProject, pair: DocumentPair, *, include_majority: bool, flagged: set[int],
    verifications: dict[int, PairVerification] | None = None,
) -> PairExport | None:
    """One document pair's exported items with provenance; None when it holds none.

    ``verifications`` (pair id -> latest verification row, from :func:`_latest_verifications`)
    saves a query per pair when streaming; without it the pair's row is read here.
    """
    if verifications is None:
        verifications = _latest_verifications(project, [pair.pk])
    verification = verifications.get(pair.pk)
    verified = verification is not None and verification.verified
    events: dict[tuple[int, int], list[dict]] = {}
    for pk, annotator_id, username, simple_id, complex_id, label, source, created_at in (
        latest_label_events(project, pair=pair).values_list(
            "pk", "annotator_id", "annotator__username", "simple_sentence_id", "complex_sentence_id", "new_label", "source", "created_at"
        )
    ):  # fmt: skip
        events.setdefault((simple_id, complex_id), []).append({
            "annotator": username, "annotator_id": annotator_id, "label": label, "source": source, "event_id": pk,
            "at": _iso(created_at), "flagged": annotator_id in flagged,
        })  # fmt: skip
    states = pair_item_states(project, pair, flagged=flagged)
    imported_pair = any(e["source"] == LabelEvent.Source.IMPORT and e["label"] for group in events.values() for e in group)
    simple_sentences, complex_sentences = _sentences(pair.simple_document_id, pair.complex_document_id)
    simple_rows = {row.pk: row for row in simple_sentences}
    complex_rows = {row.pk: row for row in complex_sentences}
    aligner = _aligner(project, pair.pk)
    adjudicators = _usernames({state.adjudication.annotator_id for state in states if state.adjudication is not None})
    result = PairExport(
        pair_id=pair.pk, complex_article=pair.complex_document.external_id, complex_level=pair.complex_document.level,
        simple_article=pair.simple_document.external_id, simple_level=pair.simple_document.level,
        complex_sentences=complex_sentences, simple_sentences=simple_sentences, complete=verified or imported_pair,
        verification={"by": verification.by.get_username(), "at": _iso(verification.created_at), "note": verification.note}
        if verified else None,
    )  # fmt: skip
    for state in states:
        key = (state.simple.pk, state.complex.pk)
        item_events = sorted(events.get(key, []), key=lambda e: e["event_id"])
        imported = [(e["event_id"], e["label"]) for e in item_events if e["source"] == LabelEvent.Source.IMPORT and e["label"]]
        if verified:
            label, status = state.final, "verified"
        elif state.adjudication is not None:
            label, status = state.adjudication.new_label, "adjudicated"
        elif imported:
            label, status = max(imported)[1], "imported"
        elif include_majority:
            label, status = _majority(state.labels), "majority"
        else:
            label = None
        if not label:
            continue
        adjudication = state.adjudication
        result.items.append(ExportItem(
            simple=simple_rows[key[0]], complex=complex_rows[key[1]], label=label, status=status,
            annotations=item_events, labels=dict(sorted(state.labels.items())),
            adjudication={
                "by": adjudicators[adjudication.annotator_id], "label": adjudication.new_label,
                "event_id": adjudication.pk, "at": _iso(adjudication.created_at),
            } if adjudication is not None else None,
            aligner=aligner.get(key),
        ))  # fmt: skip
    result.items.sort(key=lambda item: (item.simple.index, item.complex.index))
    return result if result.items else None


def pair_exports(
    project: AnnotationProject, pair_ids: list[int], *, include_majority: bool
) -> Iterator[tuple[int, PairExport | None]]:
    """Stream (pair id, :func:`pair_export`) over ``pair_ids`` in that order (None for a pair without items)."""
    from annotation.queue import flagged_annotator_ids

    flagged = flagged_annotator_ids(project) if project.exclude_flagged else set()
    for start in range(0, len(pair_ids), 200):  # a page of pair rows at a time, never the whole project
        chunk = pair_ids[start : start + 200]
        pairs = DocumentPair.objects.filter(pk__in=chunk).select_related("complex_document", "simple_document").defer(
            "complex_document__raw_text", "simple_document__raw_text"
        )
        by_pk = {pair.pk: pair for pair in pairs}
        verifications = _latest_verifications(project, chunk)
        for pair_id in chunk:
            yield pair_id, pair_export(
                project, by_pk[pair_id], include_majority=include_majority, flagged=flagged, verifications=verifications
            )
