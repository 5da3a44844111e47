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
so every export of the same state comes out the same. Each annotation names the suggestions its
label was made with (``suggestion``: run, model, kind, and whether that was ``recorded`` when the label
was saved or ``backfilled``, :mod:`annotation.provenance`), and the item's ``aligner`` block is that
run's candidate (the run most of the item's labels were made with), never a run created after them.
The rows behind them are read a page
of PAGE_PAIRS document pairs at a time, a fixed number of queries per page (issue 17: seven
queries per pair were most of an export's time), so memory holds one page, not the project. Their times come
formatted by PostgreSQL (:class:`IsoTime`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db.models import CharField, Func

from alignment.aligning.model_names import public_model_version
from alignment.models import AlignmentRun, CandidateAlignment, DocumentPair, Sentence
from annotation import labels
from annotation.models import AnnotationProject, Assignment, LabelEvent
from annotation.provenance import STORED

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
    flat_rows: dict[str, list[dict]] = field(default_factory=dict, init=False, repr=False, compare=False)  # writers' cache, by split


class IsoTime(Func):
    """A timestamp as ``datetime.isoformat()`` writes a UTC time (``2026-12-02T04:18:45.123456+00:00``, without the
    fraction when it is zero), written by PostgreSQL: reading 176,166 label times as datetimes (psycopg parses their
    text) and writing them out again took a third of an export's reading of its rows (1,000 pairs; pyinstrument)."""

    template = (  # the fraction dropped when it is zero, as isoformat does; the expression once (it may be a parameter)
        "regexp_replace(to_char((%(expressions)s) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '\\.000000$', '') || '+00:00'"
    )
    output_field = CharField()


def _iso(moment: str | None) -> str:
    return moment or ""


def clean_text(text: str) -> str:
    return " ".join(text.split())


def candidate_pair_ids(project: AnnotationProject, *, include_majority: bool) -> list[int]:
    """Document pairs that may hold exported labels, by pk (cheap: a few queries for the whole project).

    The split is assigned over these before streaming, so it is known when each pair is written.
    """
    pair_ids = set(project.pairs.values_list("pk", flat=True))
    chosen = labels.verified_pair_ids(project)
    events = LabelEvent.objects.filter(project=project)
    if not include_majority:
        events = events.filter(source__in=(LabelEvent.Source.ADJUDICATION, LabelEvent.Source.IMPORT))
    chosen |= set(events.values_list("pair_id", flat=True).distinct())
    return sorted(chosen & pair_ids)


@dataclass(frozen=True)
class _Adjudication:
    pk: int
    annotator: str
    new_label: str
    created_at: str  # ISO 8601 (IsoTime)


@dataclass
class _PairRows:
    """What one document pair's export needs, read for a whole page of pairs at once (see :class:`_Page`)."""

    pair_id: int
    simple_document_id: int
    complex_document_id: int
    simple_article: str
    simple_level: str
    complex_article: str
    complex_level: str
    events: list[tuple] = field(default_factory=list)  # latest own events: pk, annotator id, username, simple, complex, label, source,
    # at, suggestion run id, suggestion (annotation.provenance)
    adjudications: dict[tuple[int, int], _Adjudication] = field(default_factory=dict)  # the latest per sentence pair
    assignments: list[tuple[int, str, bool]] = field(default_factory=list)  # annotator id, username, completed
    candidates: dict[tuple[int, int, int], tuple] = field(default_factory=dict)  # (run, simple, complex) -> the row of a run labels cite


class _Page:
    """A page of document pairs with everything their exports need, in a fixed number of queries (not per pair).

    The queries are the per-pair ones of :func:`annotation.adjudication.review.pair_item_states` and the
    export's own, each filtered by ``pair_id IN (page)`` and split by pair here: the latest own
    events (:func:`~annotation.labels.latest_label_events`), the latest adjudication per
    sentence pair, the assignments, the sentences of both documents, the suggestion run's
    candidates and the latest verification.
    """

    def __init__(self, project: AnnotationProject, pair_ids: list[int]) -> None:
        name = get_user_model().USERNAME_FIELD
        self.pairs: dict[int, _PairRows] = {
            row[0]: _PairRows(*row)
            for row in DocumentPair.objects.filter(pk__in=pair_ids).values_list(
                "pk", "simple_document_id", "complex_document_id", "simple_document__external_id", "simple_document__level",
                "complex_document__external_id", "complex_document__level",
            )
        }  # fmt: skip
        self.verifications: dict[int, tuple] = {
            row[0]: row[1:]
            for row in labels.latest_verifications(project, pair_id__in=pair_ids)
            .values_list("pair_id", "verified", f"by__{name}", IsoTime("created_at"), "note")
        }  # fmt: skip
        for pair_id, *event in labels.latest_label_events(project, pair_id__in=pair_ids).values_list(
            "pair_id", "pk", "annotator_id", "annotator__username", "simple_sentence_id", "complex_sentence_id", "new_label", "source",
            IsoTime("created_at"), "suggestion_run_id", "suggestion",
        ):  # fmt: skip
            self.pairs[pair_id].events.append(tuple(event))
        adjudications = labels.latest_adjudications(project, pair_id__in=pair_ids).values_list(
            "pair_id", "simple_sentence_id", "complex_sentence_id", "pk", f"annotator__{name}", "new_label", IsoTime("created_at")
        )
        for pair_id, simple_id, complex_id, *adjudication in adjudications:
            self.pairs[pair_id].adjudications[(simple_id, complex_id)] = _Adjudication(*adjudication)
        for pair_id, annotator_id, username, completed_at in (
            Assignment.objects.filter(project=project, pair_id__in=pair_ids).order_by("pair_id", "annotator_id")
            .values_list("pair_id", "annotator_id", f"annotator__{name}", "completed_at")
        ):  # fmt: skip
            self.pairs[pair_id].assignments.append((annotator_id, username, completed_at is not None))
        self.sentences: dict[int, list[SentenceRow]] = {}
        documents = [document for rows in self.pairs.values() for document in (rows.simple_document_id, rows.complex_document_id)]
        for document_id, pk, index, paragraph, in_paragraph, text in (
            Sentence.objects.filter(document_id__in=documents).order_by("document_id", "index")
            .values_list("document_id", "pk", "index", "paragraph__index", "index_in_paragraph", "text")
        ):  # fmt: skip
            self.sentences.setdefault(document_id, []).append(SentenceRow(pk, index, paragraph, in_paragraph, clean_text(text)))
        run_ids = {event[8] for rows in self.pairs.values() for event in rows.events if event[8] is not None}
        self.runs: dict[int, dict] = {
            run.pk: {"run_id": run.pk, "model": run.model_label, "model_version": run.model_version_public, "measure": run.primary_measure}
            for run in AlignmentRun.objects.filter(pk__in=run_ids)
        }  # the runs the page's labels were made with, by id
        for pair_id, run_id, simple_id, complex_id, *candidate in (
            CandidateAlignment.objects.filter(run_id__in=run_ids, pair_id__in=pair_ids)
            .order_by("pk")
            .values_list(
                "pair_id", "run_id", "simple_sentence_id", "complex_sentence_id", "scores", "score", "crf_marginal", "label", "group_index"
            )
        ):  # fmt: skip
            self.pairs[pair_id].candidates[(run_id, simple_id, complex_id)] = tuple(candidate)

    def suggestion(self, rows: _PairRows, key: tuple[int, int], run_id: int | None, recorded: dict) -> dict | None:
        """What an annotation's label was made with: the run, its model, and that run's verdict on the item; None for
        imported labels (nothing was suggesting)."""
        if not recorded:
            return None
        run = self.runs.get(run_id) if run_id is not None else None
        candidate = rows.candidates.get((run_id, *key)) if run_id is not None else None
        made = {
            "run_id": recorded.get("run_id"), "model": recorded.get("model") or (run["model"] if run else None),
            "model_version": public_model_version(recorded.get("model_version")), "kind": recorded.get("kind"),
            "provenance": recorded.get("basis"),
            "predicted_label": candidate[3] if candidate else None, "score": candidate[1] if candidate else None,
        }  # fmt: skip
        if "bulk" in recorded:  # a bulk accept's threshold and the precision estimated there (annotation.labelling.bulk)
            made["bulk"] = recorded["bulk"]
        return made

    def aligner(self, rows: _PairRows, key: tuple[int, int], annotations: list[dict]) -> dict | None:
        """The candidate of the run the item's labels were made with (the run most of them name; ties: the earliest
        label's), with who labelled under it; None when no label was made with a run that proposed the item."""
        by_run: dict[int, list[dict]] = {}
        for annotation in annotations:  # in event order
            run_id = (annotation["suggestion"] or {}).get("run_id")
            if annotation["suggestion"] and annotation["suggestion"]["kind"] == STORED and (run_id, *key) in rows.candidates:
                by_run.setdefault(run_id, []).append(annotation)
        if not by_run:
            return None
        run_id = max(by_run, key=lambda run: (len(by_run[run]), -by_run[run][0]["event_id"]))
        scores, score, marginal, label, group = rows.candidates[(run_id, *key)]
        return {
            **self.runs[run_id], "scores": {name: scores[name] for name in sorted(scores)}, "score": score, "crf_marginal": marginal,
            "predicted_label": label, "group_index": group, "seen_by": sorted(a["annotator"] for a in by_run[run_id]),
        }  # fmt: skip


def _majority(labels: dict[str, str | None]) -> str | None:
    given = Counter(label for label in labels.values() if label)
    if not given:
        return None
    label, count = max(sorted(given.items()), key=lambda entry: entry[1])
    return label if 2 * count > len(labels) else None


def _item_labels(project: AnnotationProject, rows: _PairRows, flagged: set[int]) -> dict[tuple[int, int], dict[str, str | None]]:
    """The labelled sentence pairs of the pair and each assigned annotator's label, by the rule of
    :func:`annotation.labels.item_labels` that the review page uses too, from this page's rows."""
    assignments = rows.assignments
    if project.exclude_flagged:
        assignments = [assignment for assignment in assignments if assignment[0] not in flagged]
    own: dict[tuple[int, int], dict[int, str]] = {}  # item -> annotator id -> current label
    for _, annotator_id, _, simple_id, complex_id, label, *_ in rows.events:
        own.setdefault((simple_id, complex_id), {})[annotator_id] = label
    return labels.item_labels(own, assignments, rows.adjudications)


def _pair_export(
    project: AnnotationProject, page: _Page, rows: _PairRows, *, include_majority: bool, flagged: set[int]
) -> PairExport | None:
    """One document pair's exported items with provenance, from its page's rows; None when it holds none."""
    verification = page.verifications.get(rows.pair_id)
    verified = verification is not None and verification[0]
    events: dict[tuple[int, int], list[dict]] = {}
    for pk, annotator_id, username, simple_id, complex_id, label, source, created_at, run_id, recorded in rows.events:
        events.setdefault((simple_id, complex_id), []).append({
            "annotator": username, "annotator_id": annotator_id, "label": label, "source": source, "event_id": pk,
            "at": _iso(created_at), "flagged": annotator_id in flagged,
            "suggestion": page.suggestion(rows, (simple_id, complex_id), run_id, recorded),
        })  # fmt: skip
    imported_pair = any(e["source"] == LabelEvent.Source.IMPORT and e["label"] for group in events.values() for e in group)
    simple_sentences = page.sentences.get(rows.simple_document_id, [])
    complex_sentences = page.sentences.get(rows.complex_document_id, [])
    simple_rows = {row.pk: row for row in simple_sentences}
    complex_rows = {row.pk: row for row in complex_sentences}
    result = PairExport(
        pair_id=rows.pair_id, complex_article=rows.complex_article, complex_level=rows.complex_level,
        simple_article=rows.simple_article, simple_level=rows.simple_level,
        complex_sentences=complex_sentences, simple_sentences=simple_sentences, complete=verified or imported_pair,
        verification={"by": verification[1], "at": _iso(verification[2]), "note": verification[3]} if verified else None,
    )  # fmt: skip
    for key, item_labels in _item_labels(project, rows, flagged).items():
        adjudication = rows.adjudications.get(key)
        item_events = sorted(events.get(key, []), key=lambda e: e["event_id"])
        imported = labels.imported_label((e["event_id"], e["label"], e["source"]) for e in item_events)
        if verified:
            agreed = labels.agreed_label(item_labels, adjudicate_all=project.adjudicate_all)
            label, status = adjudication.new_label if adjudication is not None else agreed, "verified"
        elif adjudication is not None:
            label, status = adjudication.new_label, "adjudicated"
        elif imported:
            label, status = imported[1], "imported"
        elif include_majority:
            label, status = _majority(item_labels), "majority"
        else:
            label = None
        if not label:
            continue
        result.items.append(ExportItem(
            simple=simple_rows[key[0]], complex=complex_rows[key[1]], label=label, status=status,
            annotations=item_events, labels=dict(sorted(item_labels.items())),
            adjudication={
                "by": adjudication.annotator, "label": adjudication.new_label, "event_id": adjudication.pk,
                "at": _iso(adjudication.created_at),
            } if adjudication is not None else None,
            aligner=page.aligner(rows, key, item_events),
        ))  # fmt: skip
    result.items.sort(key=lambda item: (item.simple.index, item.complex.index))
    return result if result.items else None


PAGE_PAIRS = 100  # document pairs read per page of queries: bounds memory, and makes the query count ~7 per page, not per pair


def pair_exports(project: AnnotationProject, pair_ids: list[int], *, include_majority: bool) -> Iterator[tuple[int, PairExport | None]]:
    """Stream (pair id, the pair's exported items, or None for a pair without items) over ``pair_ids`` in that order.

    Reads a page of PAGE_PAIRS pairs at a time, each page in a fixed number of queries: memory holds
    one page, never the whole project.
    """
    from annotation.labelling.quality import flagged_annotator_ids

    flagged = flagged_annotator_ids(project) if project.exclude_flagged else set()
    for start in range(0, len(pair_ids), PAGE_PAIRS):
        chunk = pair_ids[start : start + PAGE_PAIRS]
        page = _Page(project, chunk)
        for pair_id in chunk:
            yield pair_id, _pair_export(project, page, page.pairs[pair_id], include_majority=include_majority, flagged=flagged)
