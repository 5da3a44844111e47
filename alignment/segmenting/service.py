"""Splitting and merging a document's sentences, and undoing that, without touching its text.

Each edit runs in one transaction under the document's row lock: the sentences it replaces are retired
(kept, for the labels that name them), the new ones are spans of the same ``raw_text``, and the document's
current sentences are numbered again in text order (``index`` and ``index_in_paragraph``), so every reader
sees a whole segmentation. Sentences no edit touched keep their rows and ids, and so their labels, vectors
and candidates. What runs stored for the document's pairs was computed on the old segmentation (its
heatmaps and Viterbi paths count sentences by position), so it goes (:func:`pair_results_remove`); the
runs in ``keep_scope`` keep the pairs in scope, for the caller to store again (annotation re-decodes the
projects' suggestion runs, :mod:`annotation.labelling.segmentation`).

What refuses, changing nothing: a run still aligning one of the document's pairs (its result would be for
the old segmentation), mined pairs or MUSS sequences in the document (they name sentences by position),
and anything outside ``alignment`` naming a touched sentence unless the caller carries it (``carried``):
gold items, for instance. The refusal says what and where.

A document's hashes (``content_hash``, ``text_hash``) stay those of the imported file, so importing the same
file again is still recognised and changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection, models, transaction
from django.db.models import Q

from alignment.aligning.results import pair_results_remove
from alignment.errors import ServiceError
from alignment.mining.models import MinedPair, MiningSequence
from alignment.models import AlignmentRun, Document, DocumentPair, Sentence
from alignment.refusals import in_projects, listed
from alignment.segmenting.models import SegmentEdit

_PARKED = 2_000_000_000  # where a sentence's index waits until the document is numbered again (below 2**31)
_SHIFT = 1_000_000_000  # numbering goes through this range so that no two current sentences share an index meanwhile


@dataclass(frozen=True)
class SegmentChange:
    """An edit made: the sentences it retired and added (text order), and the document's pairs."""

    edit: SegmentEdit
    retired: list[Sentence]
    added: list[Sentence]
    pair_ids: list[int]


def split_spans(text: str, offset: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The two parts' spans within ``text`` when split ``offset`` characters in, the space between them left out;
    ValueError naming the problem when a part would be empty."""
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 < offset < len(text):
        raise ValueError(f"offset: a split point must lie inside the sentence (1 to {len(text) - 1} characters in), not {offset!r}")
    head, tail = text[:offset].rstrip(), text[offset:].lstrip()
    if not head.strip() or not tail.strip():
        raise ValueError("offset: the split point leaves one part empty; choose a point between two words")
    return (0, len(head)), (len(text) - len(tail), len(text))


def document_pair_ids(document_id: int) -> list[int]:
    return sorted(
        DocumentPair.objects.filter(Q(simple_document_id=document_id) | Q(complex_document_id=document_id)).values_list("pk", flat=True)
    )


def sentence_split(
    *, sentence_id: int, offset: int, by: AbstractBaseUser | None, where: str = "", carried: Collection[type[models.Model]] = (),
    keep_scope: Collection[int] = (),
) -> SegmentChange:  # fmt: skip
    """Split a current sentence ``offset`` characters into its text into two sentences of its paragraph."""
    with transaction.atomic():
        sentence = _current(sentence_id)
        document = Document.objects.select_for_update().get(pk=sentence.document_id)
        sentence.refresh_from_db()  # after the lock: an edit that held it may have retired it
        if sentence.retired_by_id is not None:
            raise ServiceError(f"sentence {sentence_id} was changed by another edit meanwhile; reload the page")
        (a0, a1), (b0, b1) = split_spans(sentence.text, offset)
        _refuse(document, [sentence], carried)
        edit = SegmentEdit.objects.create(
            document=document, kind=SegmentEdit.Kind.SPLIT, position=sentence.index, offset=offset, by=by, where=where[:300]
        )
        parts = [
            Sentence(
                document=document,
                paragraph_id=sentence.paragraph_id,
                index=_PARKED + k,
                index_in_paragraph=0,
                text=sentence.text[start:end],
                char_start=sentence.char_start + start,
                char_end=sentence.char_start + end,
            )  # fmt: skip
            for k, (start, end) in enumerate(((a0, a1), (b0, b1)))
        ]
        return _apply(edit, [sentence], parts, keep_scope)


def sentences_merge(
    *, sentence_id: int, by: AbstractBaseUser | None, where: str = "", carried: Collection[type[models.Model]] = (),
    keep_scope: Collection[int] = (),
) -> SegmentChange:  # fmt: skip
    """Merge a current sentence with the next one of its document; both must be in the same paragraph."""
    with transaction.atomic():
        first = _current(sentence_id)
        document = Document.objects.select_for_update().get(pk=first.document_id)
        first.refresh_from_db()
        if first.retired_by_id is not None:
            raise ServiceError(f"sentence {sentence_id} was changed by another edit meanwhile; reload the page")
        second = Sentence.objects.filter(document=document, index=first.index + 1).first()
        if second is None:
            raise ValueError(f"sentence: sentence {first.index + 1} is the last of its document; there is no next sentence to merge with")
        if second.paragraph_id != first.paragraph_id:
            raise ValueError(
                f"sentence: sentences {first.index + 1} and {second.index + 1} are in different paragraphs; a merge joins two "
                "neighbouring sentences of one paragraph"
            )
        _refuse(document, [first, second], carried)
        edit = SegmentEdit.objects.create(document=document, kind=SegmentEdit.Kind.MERGE, position=first.index, by=by, where=where[:300])
        merged = Sentence(
            document=document, paragraph_id=first.paragraph_id, index=_PARKED, index_in_paragraph=0,
            text=document.raw_text[first.char_start : second.char_end], char_start=first.char_start, char_end=second.char_end,
        )  # fmt: skip
        return _apply(edit, [first, second], [merged], keep_scope)


def latest_undoable(document_id: int) -> SegmentEdit | None:
    """The edit an undo would take back: the latest split or merge of the document not undone yet."""
    return (
        SegmentEdit.objects.filter(document_id=document_id, undone_by__isnull=True)
        .exclude(kind=SegmentEdit.Kind.UNDO)
        .order_by("-pk")
        .first()
    )


def segment_undo(
    *, document_id: int, by: AbstractBaseUser | None, where: str = "", carried: Collection[type[models.Model]] = (),
    keep_scope: Collection[int] = (), expected: int | None = None,
) -> SegmentChange:  # fmt: skip
    """Undo the document's latest edit not undone yet (``expected``: the edit the screen offered to undo)."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document_id)
        edit = latest_undoable(document_id)
        if edit is None:
            raise ValueError(f"document {document_id} has no sentence edit to undo")
        if expected is not None and edit.pk != expected:
            raise ServiceError("the document's sentences were edited meanwhile; reload the page to see what undo would take back")
        added = list(Sentence.all_objects.filter(pk__in=edit.after).order_by("char_start"))
        if any(sentence.retired_by_id is not None for sentence in added):
            raise ServiceError(f"a later edit changed the sentences of edit {edit.pk}; undo that one first")
        retired = list(Sentence.all_objects.filter(pk__in=edit.before).order_by("char_start"))
        _refuse(document, added, carried)
        undo = SegmentEdit.objects.create(
            document=document, kind=SegmentEdit.Kind.UNDO, position=added[0].index, undoes=edit, by=by, where=where[:300]
        )
        for k, sentence in enumerate(retired):  # back among the current sentences, at a parked index until numbered again
            Sentence.all_objects.filter(pk=sentence.pk).update(retired_by=None, index=_PARKED + k)
        return _apply(undo, added, retired, keep_scope, revived=True)


def _current(sentence_id: int) -> Sentence:
    sentence = Sentence.objects.filter(pk=sentence_id).first()
    if sentence is None:
        raise ValueError(f"sentence: {sentence_id} is not a current sentence of any document")
    return sentence


def _apply(
    edit: SegmentEdit, old: list[Sentence], new: list[Sentence], keep_scope: Collection[int], *, revived: bool = False
) -> SegmentChange:
    """Retire ``old``, add ``new`` (already back when ``revived``), number the document again, drop the stale results."""
    Sentence.all_objects.filter(pk__in=[s.pk for s in old]).update(retired_by=edit)
    if not revived:
        new = Sentence.objects.bulk_create(new)
    _renumber(edit.document_id)
    SegmentEdit.objects.filter(pk=edit.pk).update(before=[s.pk for s in old], after=[s.pk for s in new])
    edit.before, edit.after = [s.pk for s in old], [s.pk for s in new]
    pair_ids = document_pair_ids(edit.document_id)
    pair_results_remove(pair_ids, keep_scope=keep_scope)
    added = list(Sentence.objects.filter(pk__in=edit.after).order_by("index"))
    return SegmentChange(edit, list(Sentence.all_objects.filter(pk__in=edit.before).order_by("char_start")), added, pair_ids)


_RENUMBER_SQL = f"""
    UPDATE {Sentence._meta.db_table} s SET "index" = r.i + {_SHIFT}, index_in_paragraph = r.j
    FROM (
        SELECT id, row_number() OVER (ORDER BY char_start) - 1 AS i,
               row_number() OVER (PARTITION BY paragraph_id ORDER BY char_start) - 1 AS j
        FROM {Sentence._meta.db_table} WHERE document_id = %(document)s AND retired_by_id IS NULL
    ) r
    WHERE s.id = r.id;
    UPDATE {Sentence._meta.db_table} SET "index" = "index" - {_SHIFT} WHERE document_id = %(document)s AND retired_by_id IS NULL;
"""


def _renumber(document_id: int) -> None:
    """The document's current sentences numbered 0.. in text order, and within each paragraph (two statements, so
    that no two current sentences share an index at any moment: the unique constraint is checked per row)."""
    with connection.cursor() as cursor:
        for statement in _RENUMBER_SQL.split(";")[:2]:
            cursor.execute(statement, {"document": document_id})


def _refuse(document: Document, touched: list[Sentence], carried: Collection[type[models.Model]]) -> None:
    """ServiceError naming everything that stops an edit of ``touched`` (nothing is changed), or nothing."""
    reasons = []
    pair_ids = document_pair_ids(document.pk)
    active = sorted(
        AlignmentRun.objects.filter(pairs__in=pair_ids, status__in=[AlignmentRun.Status.QUEUED, AlignmentRun.Status.RUNNING])
        .values_list("pk", flat=True)
        .distinct()
    )
    if active:
        reasons.append(
            f"alignment run{'s' if len(active) > 1 else ''} {listed(active)} still align{'s' if len(active) == 1 else ''} its pairs"
        )
    mined = sorted(
        set(MinedPair.objects.filter(Q(source_document=document) | Q(target_document=document)).values_list("job_id", flat=True))
        | set(MiningSequence.objects.filter(document=document).values_list("job_id", flat=True))
    )
    if mined:
        reasons.append(f"mining job{'s' if len(mined) > 1 else ''} {listed(mined)} name its sentences by position")
    ids = [s.pk for s in touched]
    for field in Sentence._meta.get_fields(include_hidden=True):
        model = getattr(field, "related_model", None)
        if not field.auto_created or field.concrete or model is None or model._meta.app_label == "alignment" or model in carried:
            continue
        rows = model._default_manager.filter(**{f"{field.field.name}__in": ids})
        count = rows.count()
        if count:
            noun = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
            reasons.append(f"{count} {noun} name{'s' if count == 1 else ''} {'it' if len(ids) == 1 else 'them'}{in_projects(rows, model)}")
    if reasons:
        numbers = " and ".join(str(s.index + 1) for s in touched)
        raise ServiceError(
            f"sentence{'s' if len(touched) > 1 else ''} {numbers} of {document} cannot be edited: " + "; ".join(dict.fromkeys(reasons))
        )
