"""Sentence splits and merges from the pair screen: the labels they carry, what refuses them, and the re-decoding.

:mod:`alignment.segmenting.service` changes the document's sentences; this module decides what happens to
what people made on them, in the same transaction:

- **Labels.** An edit carries the editor's own current labels of the sentences it touches (in every project and
  pair, as simple or complex side) to the sentences that replace them: a merge when that is unambiguous (the two
  sentences say the same of each partner, or only one of them has labels), a split only when the editor confirms
  (``keep_labels``: both parts get every label of the sentence), else the split's labels are dropped and counted.
  An undo is the inverse edit under the same rules. Each carried label is a new event on the new sentence pair
  with the source and provenance of the label it carries plus ``carried_from`` (the edit and the old sentence
  pair); the old sentence pair gets an event that clears it (source ``segmentation``), so the history keeps both
  and every reader of current labels (screens, agreement, exports, training) sees the current segmentation.
- **Refusals** (nothing changes, the message says why): another person's current label on a touched sentence,
  an adjudication of one, a pair of the document verified in some project (its gold would change), a merge whose
  two sentences disagree about a partner, and what :mod:`alignment.segmenting.service` refuses (a gold test item,
  a run still aligning the pairs, mined pairs).
- **Re-decoding.** Every project's suggestion run that holds one of the document's pairs keeps the pair in scope
  while its stale result goes; a small run over those pairs with the same configuration and model is queued at
  once (an interactive run, ahead of bulk work), and when it succeeds its rows are copied into the suggestion run
  (:func:`redecoded_store`, on ``run_succeeded``), the pair's ``kept_from`` naming it, as an adaptation's
  re-suggestion does. Until then the screen says the suggestions are being decoded again.

Concurrency: the edit locks the assignments of every pair of the document, the lock each label write takes first
(:func:`annotation.labels.write_guard`), so a label saved meanwhile is either carried or refused on a retired sentence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q

from alignment.aligning.service import ALIGN_TASK
from alignment.errors import ServiceError
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.models import AlignedPair, AlignmentRun, DocumentPair, Sentence
from alignment.segmenting import service as segmenting
from alignment.segmenting.models import SegmentEdit
from annotation import labels
from annotation.models import AnnotationProject, Assignment, ItemEvent, LabelEvent, PairVerification, ProjectMembership
from annotation.provenance import KEPT_FROM

SPLIT, MERGE, UNDO = "split", "merge", "undo"
OPERATIONS = (SPLIT, MERGE, UNDO)
REDECODE_INTO = "redecode_into"  # run config: the suggestion runs that get this run's rows when it succeeds
CARRIED = (LabelEvent, ItemEvent)  # labels are carried here; skips, flags and comments stay on the items they name

Item = tuple[int, int]  # (simple sentence id, complex sentence id)


@dataclass
class SegmentOutcome:
    edit: SegmentEdit
    carried: int = 0
    dropped: int = 0
    redecoding: list[int] = field(default_factory=list)  # the runs queued to decode the document's pairs again

    @property
    def message(self) -> str:
        what = {SPLIT: "Sentence split", MERGE: "Sentences merged", UNDO: "Sentence edit undone"}[self.edit.kind]
        parts = [f"{what}."]
        if self.carried:
            parts.append(f"{self.carried} label{'s' if self.carried != 1 else ''} carried over.")
        if self.dropped:
            parts.append(f"{self.dropped} label{'s' if self.dropped != 1 else ''} of the split sentence removed (not confirmed).")
        if self.redecoding:
            parts.append("Suggestions are being decoded again for the new sentences.")
        return " ".join(parts)


def segment_edit(
    *, project: AnnotationProject, user: AbstractBaseUser, pair: DocumentPair, operation: str, sentence_id: int | None = None,
    offset: int | None = None, side: str = "", keep_labels: bool = False, expected_undo: int | None = None,
) -> SegmentOutcome:  # fmt: skip
    """Split or merge a sentence of ``pair`` (either side), or undo the latest edit of one of its documents (``side``).

    PermissionError unless the user is assigned the pair in the project or manages the project; ServiceError,
    ValueError or Conflict naming the reason when the edit is refused, with nothing changed."""
    if operation not in OPERATIONS:
        raise ServiceError(f"operation: {operation!r} is not one of {', '.join(OPERATIONS)}", field="operation")
    _permission(project, user, pair)
    document_id = _document_of(pair, operation, sentence_id, side)
    where = f"project {project.name!r}, pair {pair.pk}"
    with transaction.atomic():
        pair_ids = segmenting.document_pair_ids(document_id)
        list(Assignment.objects.select_for_update().filter(pair_id__in=pair_ids).order_by("pk").values_list("pk", flat=True))
        if operation == UNDO:
            edit = segmenting.latest_undoable(document_id)
            if edit is None:
                raise ServiceError("there is no sentence edit of this document to undo", field="side")
            touched = list(Sentence.objects.filter(pk__in=edit.after).order_by("index"))
            if len(touched) != len(edit.after):
                raise ServiceError(f"a later edit changed the sentences of edit {edit.pk}; undo that one first", field="side")
        elif operation == SPLIT:
            touched = [Sentence.objects.get(pk=sentence_id)]
        else:
            first = Sentence.objects.get(pk=sentence_id)
            touched = list(Sentence.objects.filter(document_id=document_id, index__in=[first.index, first.index + 1]).order_by("index"))
        current = _labels_on(touched, user)
        splitting = operation == SPLIT or (operation == UNDO and len(touched) == 1)
        if not splitting:
            _merge_conflicts(current, touched)
        keep = _redecode_targets(pair_ids)
        options = {"by": user, "where": where, "carried": CARRIED, "keep_scope": set(keep)}
        if operation == SPLIT:
            change = segmenting.sentence_split(sentence_id=sentence_id, offset=offset, **options)
        elif operation == MERGE:
            change = segmenting.sentences_merge(sentence_id=sentence_id, **options)
        else:
            change = segmenting.segment_undo(document_id=document_id, expected=expected_undo, **options)
        _clear(current, change.edit)
        outcome = SegmentOutcome(change.edit)
        outcome.carried, outcome.dropped = _carry(current, change, keep_labels=keep_labels or not splitting)
        outcome.redecoding = _redecode(keep, user)
        change.edit.report = {"labels_carried": outcome.carried, "labels_dropped": outcome.dropped, "redecoding": outcome.redecoding}
        change.edit.save(update_fields=["report"])
        for project in AnnotationProject.objects.filter(pairs__in=pair_ids).distinct().order_by("pk"):
            labels.assignments_recount(project, pair_ids=pair_ids)  # labels carried, and the queue's suggestions gone until re-decoded
    return outcome


def _permission(project: AnnotationProject, user: AbstractBaseUser, pair: DocumentPair) -> None:
    assigned = Assignment.objects.filter(project=project, pair=pair, annotator=user).exists()
    manages = ProjectMembership.objects.filter(project=project, user=user, role=ProjectMembership.Role.MANAGER).exists()
    if not (assigned or manages) or not project.pairs.filter(pk=pair.pk).exists():
        raise PermissionError(f"{user} may not edit the sentences of pair {pair.pk} in project {project.name!r}")


def _document_of(pair: DocumentPair, operation: str, sentence_id: int | None, side: str) -> int:
    """The document the edit is in: the sentence's (one of the pair's two), or ``side``'s for an undo."""
    documents = {"simple": pair.simple_document_id, "complex": pair.complex_document_id}
    if operation == UNDO:
        if side not in documents:
            raise ServiceError("side: say which document's edit to undo, simple or complex", field="side")
        return documents[side]
    document_id = Sentence.objects.filter(pk=sentence_id).values_list("document_id", flat=True).first() if sentence_id else None
    if document_id not in documents.values():
        raise ServiceError(f"sentence: {sentence_id} is not a current sentence of pair {pair.pk}", field="sentence")
    return document_id


def _labels_on(touched: list[Sentence], user: AbstractBaseUser) -> dict[int, list[LabelEvent]]:
    """The user's current labels on each touched sentence (by its id); ServiceError when anyone else's or a
    reviewer's decision is there, or a pair of the document is verified."""
    ids = [s.pk for s in touched]
    on = Q(simple_sentence_id__in=ids) | Q(complex_sentence_id__in=ids)
    latest = LabelEvent.objects.filter(on).select_related("project", "annotator")  # the touched sentences' history: bounded by people
    mine: dict[int, list[LabelEvent]] = defaultdict(list)
    reasons = []
    for event in _latest_per_chain(latest):
        if not event.new_label:
            continue
        if event.source == LabelEvent.Source.ADJUDICATION:
            reasons.append(f"a reviewer decided its sentence pairs in project {event.project.name!r}")
        elif event.annotator_id != user.pk:
            reasons.append(f"{event.annotator} labelled it in project {event.project.name!r}")
        else:
            mine[event.simple_sentence_id if event.simple_sentence_id in ids else event.complex_sentence_id].append(event)
    pair_ids = segmenting.document_pair_ids(touched[0].document_id)
    verifications = (
        PairVerification.objects.filter(pair_id__in=pair_ids).order_by("project_id", "pair_id", "-pk").distinct("project_id", "pair_id")
    )
    for verification in verifications.select_related("project"):
        if verification.verified:
            reasons.append(f"pair {verification.pair_id} is verified in project {verification.project.name!r} (withdraw that first)")
    if reasons:
        numbers = " and ".join(str(s.index + 1) for s in touched)
        raise ServiceError(f"sentence{'s' if len(touched) > 1 else ''} {numbers} cannot be edited: " + "; ".join(dict.fromkeys(reasons)))
    return mine


def _latest_per_chain(events: Iterable[LabelEvent]) -> Iterable[LabelEvent]:
    """The latest event of each chain: an annotator's own events of a sentence pair are one chain whatever their
    source (an undo, a suggestion accepted, a bulk accept), a sentence pair's adjudications another."""
    latest: dict[tuple, LabelEvent] = {}
    for event in events:
        own = event.source != LabelEvent.Source.ADJUDICATION
        key = (event.project_id, event.annotator_id if own else None, own, event.simple_sentence_id, event.complex_sentence_id)
        if key not in latest or latest[key].pk < event.pk:
            latest[key] = event
    return latest.values()


def _partner(event: LabelEvent, sentence_id: int) -> tuple[int, int, int, str]:
    """(project, pair, partner sentence, the touched sentence's side) of a label on ``sentence_id``."""
    if event.simple_sentence_id == sentence_id:
        return event.project_id, event.pair_id, event.complex_sentence_id, "simple"
    return event.project_id, event.pair_id, event.simple_sentence_id, "complex"


def _merge_conflicts(current: dict[int, list[LabelEvent]], touched: list[Sentence]) -> None:
    """ValueError when two sentences to be joined say different things of a partner (both labelled)."""
    if sum(1 for s in touched if current.get(s.pk)) < 2:
        return  # one of them has no label: the other's labels are the merged sentence's
    said = [{_partner(e, s.pk)[:3]: e.new_label for e in current[s.pk]} for s in touched]
    for key in sorted(set(said[0]) | set(said[1])):
        first, second = (LabelEvent.label_name(side.get(key, "")) for side in said)
        if first != second:
            raise ServiceError(
                f"sentence: sentences {touched[0].index + 1} and {touched[1].index + 1} disagree about sentence {_number(key[2])} "
                f"of pair {key[1]} ({first} / {second}); make their labels agree, or clear them, before joining them",
                field="sentence",
            )


def _number(sentence_id: int) -> int:
    return (Sentence.all_objects.filter(pk=sentence_id).values_list("index", flat=True).first() or 0) + 1


def _clear(current: dict[int, list[LabelEvent]], edit: SegmentEdit) -> None:
    """An event clearing each carried label on the old sentence pair (its chain goes on there, should an undo bring it back)."""
    for events in current.values():
        for event in events:
            LabelEvent.objects.create(
                project_id=event.project_id, pair_id=event.pair_id, annotator_id=event.annotator_id,
                simple_sentence_id=event.simple_sentence_id, complex_sentence_id=event.complex_sentence_id,
                old_label=event.new_label, new_label=LabelEvent.Label.NONE, source=LabelEvent.Source.SEGMENTATION,
                previous_id=event.pk, suggestion_run_id=event.suggestion_run_id, suggestion={"segment_edit": edit.pk},
            )  # fmt: skip


def _carry(current: dict[int, list[LabelEvent]], change: segmenting.SegmentChange, *, keep_labels: bool) -> tuple[int, int]:
    """Write the carried labels on the new sentence pairs; (labels written, labels dropped)."""
    wanted: dict[tuple[int, int, int, Item], LabelEvent] = {}
    dropped = 0
    for old_id, events in current.items():
        for event in events:
            if not keep_labels:
                dropped += 1
                continue
            project_id, pair_id, partner, side = _partner(event, old_id)
            for new in change.added:
                item = (new.pk, partner) if side == "simple" else (partner, new.pk)
                wanted.setdefault((project_id, pair_id, event.annotator_id, item), event)
    for (project_id, pair_id, annotator_id, (simple_id, complex_id)), event in wanted.items():
        previous = (
            LabelEvent.objects.filter(
                project_id=project_id, annotator_id=annotator_id, simple_sentence_id=simple_id, complex_sentence_id=complex_id
            )
            .exclude(source=LabelEvent.Source.ADJUDICATION)
            .order_by("-pk")
            .first()
        )  # a sentence an undo brings back has its history
        carried_from = {"edit": change.edit.pk, "simple": event.simple_sentence_id, "complex": event.complex_sentence_id}
        LabelEvent.objects.create(
            project_id=project_id, pair_id=pair_id, annotator_id=annotator_id, simple_sentence_id=simple_id,
            complex_sentence_id=complex_id, old_label=previous.new_label if previous else "", new_label=event.new_label,
            source=event.source, previous=previous, suggestion_run_id=event.suggestion_run_id,
            suggestion={**(event.suggestion or {}), "carried_from": carried_from},
        )  # fmt: skip
    return len(wanted), dropped


def _redecode_targets(pair_ids: list[int]) -> dict[int, list[int]]:
    """The projects' suggestion runs that hold one of the pairs in scope: run id -> those pairs."""
    targets: dict[int, list[int]] = defaultdict(list)
    projects = AnnotationProject.objects.filter(pairs__in=pair_ids, suggestion_run__isnull=False).distinct()
    for run_id in projects.values_list("suggestion_run_id", flat=True).distinct():
        for pair_id in AlignmentRun.pairs.through.objects.filter(alignmentrun_id=run_id, documentpair_id__in=pair_ids).values_list(
            "documentpair_id", flat=True
        ):
            targets[run_id].append(pair_id)
    return dict(targets)


def _redecode(targets: dict[int, list[int]], user: AbstractBaseUser) -> list[int]:
    """Queue, per suggestion run, a run over its pairs of the document with its configuration and model."""
    queued = []
    for run_id, pair_ids in sorted(targets.items()):
        source = AlignmentRun.objects.get(pk=run_id)
        config = {key: value for key, value in source.config.items() if key != KEPT_FROM}
        run = AlignmentRun.objects.create(
            corpus_id=source.corpus_id, scope=AlignmentRun.Scope.PAIRS, config={**config, REDECODE_INTO: [run_id]},
            model_version=source.model_version, pairs_total=len(pair_ids), created_by=user,
        )  # fmt: skip
        run.pairs.set(pair_ids)
        enqueue_on_commit(ALIGN_TASK, run, run_id=run.pk)
        queued.append(run.pk)
    return queued


def redecoded_store(run: AlignmentRun) -> int:
    """A re-decoding run that succeeded: its rows become its suggestion runs' for its pairs. Returns the pairs stored."""
    from annotation.training.resuggest import PER_PAIR_ROWS, copy_rows, run_recount

    targets = (run.config or {}).get(REDECODE_INTO) or []
    if not targets:
        return 0
    pair_ids = set(AlignedPair.objects.filter(run=run).values_list("pair_id", flat=True))
    with transaction.atomic():
        for target in AlignmentRun.objects.select_for_update().filter(pk__in=targets).order_by("pk"):
            pairs = pair_ids & set(target.pairs.values_list("pk", flat=True))
            for model in PER_PAIR_ROWS:
                model.objects.filter(run=target, pair_id__in=pairs).delete()
                copy_rows(model, run.pk, target.pk, pairs)
            kept = {**target.config.get(KEPT_FROM, {}), **{str(pair): run.pk for pair in sorted(pairs)}}
            AlignmentRun.objects.filter(pk=target.pk).update(config={**target.config, KEPT_FROM: kept})
            run_recount(target)
            for project in AnnotationProject.objects.filter(suggestion_run=target, pairs__in=pairs).distinct():
                labels.assignments_recount(project, pair_ids=sorted(pairs))
    return len(pair_ids)


def redecoding_note(project: AnnotationProject, pair: DocumentPair) -> str:
    """What the screen says while the suggestion run waits for the pair's re-decoding (or when it failed), else ""."""
    run_id = project.suggestion_run_id
    if run_id is None:
        return ""
    runs = AlignmentRun.objects.filter(pairs=pair, config__redecode_into__contains=[run_id]).order_by("-pk")
    latest = runs.first()
    if latest is None or latest.status == AlignmentRun.Status.SUCCEEDED:
        return ""
    if latest.status in (AlignmentRun.Status.QUEUED, AlignmentRun.Status.RUNNING):
        return f"The sentences were edited: the suggestions are being decoded again (run #{latest.pk}); reload in a moment."
    return f"The sentences were edited, and decoding the suggestions again failed (run #{latest.pk}: {latest.error or latest.status})."


HISTORY_SHOWN = 8


def edit_text(edit: SegmentEdit, side: str) -> str:
    """One edit as the screen lists it: "split of complex sentence 3 (anna, 2026-11-28 18:40)"."""
    if edit.kind == SegmentEdit.Kind.UNDO:
        what = f"undo of the {edit.undoes.get_kind_display().lower()} at {side} sentence {edit.undoes.position + 1}"
    elif edit.kind == SegmentEdit.Kind.SPLIT:
        what = f"split of {side} sentence {edit.position + 1}"
    else:
        what = f"merge of {side} sentences {edit.position + 1} and {edit.position + 2}"
    return f"{what} ({edit.by or 'someone'}, {edit.created_at:%Y-%m-%d %H:%M})"


def segment_screen(pair: DocumentPair) -> dict:
    """The pair screen's sentence edits: per side the edit an undo would take back, and the latest edits of both documents."""
    sides = {"simple": pair.simple_document_id, "complex": pair.complex_document_id}
    undo = {}
    for side, document_id in sides.items():
        edit = segmenting.latest_undoable(document_id)
        undo[side] = {"edit": edit.pk, "text": edit_text(edit, side)} if edit else None
    history = []
    edits = SegmentEdit.objects.filter(document_id__in=sides.values()).select_related("by", "undoes").order_by("-pk")[:HISTORY_SHOWN]
    for edit in edits:
        side = "simple" if edit.document_id == pair.simple_document_id else "complex"
        history.append({"text": edit_text(edit, side), "report": edit.report, "undone": hasattr(edit, "undone_by")})
    return {"undo": undo, "history": history}
