"""Queue mode: one candidate at a time, gold test items mixed in (their accuracy: :mod:`annotation.labelling.quality`).

Order of the queue (the annotator picks): ``uncertainty`` puts candidates whose CRF
marginal is closest to 0.5 first, ``disagreement`` those whose similarity measures
disagree most, ``random`` a random order. Every ``round(1 / test_item_rate)``-th item is a
gold test item the annotator has not answered yet; it looks exactly like the others.

An item leaves the queue when the annotator's current label on it is set (an undone label
brings it back) or when they skip it (``s``; an undo brings it back). Undo answers which
item it brought back, so the screen can show that item again.

The queue is read from figures kept on each assignment (``Assignment.queue_*``, recounted from the pair's rows by every
label set or cleared, skip, undo and new test item: :func:`annotation.labels.assignments_recount`): how many
suggestions of the pair are left, and which comes first in each order. The next item is the first of the pair that
comes first, found by an index, and what is left is their sum: a few milliseconds however large the project, where
reading every suggestion against every label took 1.5 s at 10,000 pairs. The rows stay the truth: the served
suggestion is checked against them, and a pair whose figures fell behind is counted again. A new suggestion run makes
the figures stale: the queue then reads the rows, as right and slower, until the ``annotation.queue_counts_refresh``
job has counted them again.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Exists, F, Func, OuterRef, QuerySet, Sum, Window

from alignment.inspection import word_diff
from alignment.jobs.enqueue import defer_unless_waiting
from alignment.models import CandidateAlignment, DocumentPair, Sentence
from annotation import labels, services
from annotation.labelling.confidence import confidences
from annotation.models import AnnotationProject, Assignment, GoldAnswer, GoldItem, ItemEvent, LabelEvent, ProjectMembership

ORDERS = ("uncertainty", "disagreement", "random")
KEPT_TRIES = 5  # pairs whose kept first suggestion turned out taken, before the queue reads the suggestions instead
QUEUE_RECOUNT_TASK = "annotation.queue_counts_refresh"


class Abs(Func):
    function = "ABS"


@dataclass
class QueueItem:
    kind: str  # "candidate" | "gold"
    item_id: int  # CandidateAlignment id or GoldItem id
    pair: DocumentPair
    simple: Sentence
    complex: Sentence
    simple_context: tuple[Sentence | None, Sentence | None]  # the sentences before and after
    complex_context: tuple[Sentence | None, Sentence | None]
    expected_previous: int | None  # the annotator's latest event on this sentence pair
    suggestion: CandidateAlignment | None = None  # the suggestion run's candidate for the pair: its label and score

    @property
    def ref(self) -> str:
        """The item as the page names it (``?item=candidate-12``): see :func:`queue_item_get`."""
        return f"{self.kind}-{self.item_id}"


@dataclass(frozen=True)
class QueueUndo:
    """What an undo did, and the item it brought back (None when it was not a queue item)."""

    message: str
    item_ref: str | None = None


def _labelled_item_count(project: AnnotationProject, annotator: AbstractBaseUser) -> int:
    """The sentence pairs the annotator ever labelled (an undone label too), as kept on their assignments."""
    return _mine(project, annotator).aggregate(n=Sum("labelled_ever"))["n"] or 0


def _mine(project: AnnotationProject, annotator: AbstractBaseUser) -> QuerySet[Assignment]:
    return Assignment.objects.filter(project=project, annotator=annotator)


def _answered_gold_ids(project: AnnotationProject, annotator: AbstractBaseUser) -> set[int]:
    """The test items whose latest answer by the annotator is a label (not a withdrawn one)."""
    latest = (
        GoldAnswer.objects.filter(gold_item__project=project, annotator=annotator)
        .order_by("gold_item_id", "-pk")
        .distinct("gold_item_id")
        .values_list("gold_item_id", "label")
    )
    return {gold_id for gold_id, label in latest if label}


def candidate_queue(project: AnnotationProject, annotator: AbstractBaseUser, order: str) -> QuerySet[CandidateAlignment]:
    """The suggestions on the annotator's pairs that they have not labelled and that are not gold items, in order."""
    if order not in ORDERS:
        raise ValueError(f"unknown queue order {order!r}; orders: {', '.join(ORDERS)}")
    if project.suggestion_run_id is None:
        return CandidateAlignment.objects.none()
    pairs = Assignment.objects.filter(project=project, annotator=annotator).values("pair")
    same_item = {"simple_sentence": OuterRef("simple_sentence"), "complex_sentence": OuterRef("complex_sentence")}
    is_gold = GoldItem.objects.filter(project=project, **same_item)
    queue = CandidateAlignment.objects.filter(run_id=project.suggestion_run_id, pair__in=pairs).filter(
        ~Exists(labels.labelled_now_subquery(project, annotator)),  # in SQL, so the queue never runs dry behind answered items
        ~Exists(is_gold),
        ~Exists(_skipped(project, annotator).filter(**same_item)),
    )
    if order == "uncertainty":
        return queue.annotate(distance=Abs(F("crf_marginal") - 0.5)).order_by("distance", "pk")
    if order == "disagreement":
        return queue.order_by("-disagreement", "pk")
    return queue.order_by("?")


def _skipped(project: AnnotationProject, annotator: AbstractBaseUser) -> QuerySet[ItemEvent]:
    """The annotator's queue skips that no undo has taken back."""
    undone = ItemEvent.objects.filter(undoes=OuterRef("pk"))
    return ItemEvent.objects.filter(project=project, annotator=annotator, kind=ItemEvent.Kind.SKIP, simple_sentence__isnull=False).filter(
        ~Exists(undone)
    )


def queue_left(project: AnnotationProject, annotator: AbstractBaseUser) -> int:
    """How many suggestions the annotator has still to label or skip (test items not counted)."""
    if _kept_counts_fresh(project, annotator):
        return _mine(project, annotator).filter(queue_open__gt=0).aggregate(n=Sum("queue_open"))["n"] or 0
    return candidate_queue(project, annotator, "disagreement").order_by().count()


def _kept_counts_fresh(project: AnnotationProject, annotator: AbstractBaseUser) -> bool:
    """Whether the queue figures kept on the annotator's assignments were counted for the project's suggestion run.

    A new suggestion run (a promotion, an adaptation, the admin) leaves them behind: until the maintenance job counts
    them again (queued here, one at a time), the queue reads the suggestions themselves, slower and as right.
    """
    if project.suggestion_run_id is None:
        return False
    if not _mine(project, annotator).exclude(queue_run_id=project.suggestion_run_id).exists():
        return True
    defer_unless_waiting(QUEUE_RECOUNT_TASK, f"queue-counts-{project.pk}", project_id=project.pk)
    return False


def queue_counts_recount(*, project_id: int, chunk: int = 500) -> int:
    """The maintenance job's work: count the queue figures again on every assignment of the project counted for another
    suggestion run, ``chunk`` pairs per transaction (a few seconds each at most); returns how many pairs it counted."""
    project = AnnotationProject.objects.filter(pk=project_id).first()
    done = 0
    while project is not None:
        stale = Assignment.objects.filter(project=project).exclude(queue_run_id=project.suggestion_run_id)
        pair_ids = sorted(set(stale.values_list("pair_id", flat=True)[:chunk]))
        if not pair_ids or project.suggestion_run_id is None:
            break
        with transaction.atomic():
            labels.assignments_recount(project, pair_ids=pair_ids)
        done += len(pair_ids)
        project = AnnotationProject.objects.filter(pk=project_id).first()  # its suggestion run may have moved on
    return done


def _context(sentence: Sentence) -> tuple[Sentence | None, Sentence | None]:
    around = {
        s.index: s for s in Sentence.objects.filter(document_id=sentence.document_id, index__in=[sentence.index - 1, sentence.index + 1])
    }
    return around.get(sentence.index - 1), around.get(sentence.index + 1)


def queue_next(project: AnnotationProject, annotator: AbstractBaseUser, order: str = "uncertainty") -> QueueItem | None:
    """The next item for the annotator, or None when their queue is empty."""
    return _queue_next(project, annotator, order)[0]


def _next_candidate(project: AnnotationProject, annotator: AbstractBaseUser, order: str) -> tuple[int | None, int]:
    """The id of the queue's next suggestion (None when there is none) and how many are left.

    From the figures kept on the annotator's assignments (:func:`annotation.labels.assignments_recount`): the pair whose
    first open suggestion comes first in ``order``, by an index, whatever the size of the project. The suggestion is
    checked against the rows themselves; should the kept figures be behind (a suggestion removed, as a pair flip does),
    that pair is counted again and the next one is tried, and after a few the queue reads the rows instead.
    """
    if project.suggestion_run_id is None:
        return None, 0
    if _kept_counts_fresh(project, annotator):
        for _ in range(KEPT_TRIES):
            open_pairs = _mine(project, annotator).filter(queue_open__gt=0)
            left = open_pairs.aggregate(n=Sum("queue_open"))["n"] or 0
            if not left:
                return None, 0
            pair_id, candidate_id = _kept_first(open_pairs, project, annotator, order)
            checked = order == "random"  # a random one is read from the rows already; a kept first is checked against them
            if candidate_id is not None and (checked or candidate_queue(project, annotator, order).filter(pk=candidate_id).exists()):
                return candidate_id, left
            labels.assignments_recount(project, pair_ids=[pair_id], annotator_id=annotator.pk)
    # The rows: the count over every row (a window) makes PostgreSQL read the queue in one pass with hash anti-joins;
    # asked for the first row alone, it would probe the suggestions one by one in queue order, expecting one soon.
    row = candidate_queue(project, annotator, order).annotate(left=Window(Count("pk"))).values_list("pk", "left").first()
    return row if row is not None else (None, 0)


def _kept_first(
    open_pairs: QuerySet[Assignment], project: AnnotationProject, annotator: AbstractBaseUser, order: str
) -> tuple[int, int | None]:
    """(pair id, its first open suggestion in ``order`` as kept) of the annotator's pair that comes first."""
    if order == "uncertainty":
        return open_pairs.order_by("queue_uncertainty", "queue_uncertainty_first").values_list("pair_id", "queue_uncertainty_first")[0]
    if order == "disagreement":
        return open_pairs.order_by("-queue_disagreement", "queue_disagreement_first").values_list("pair_id", "queue_disagreement_first")[0]
    pair_id = open_pairs.order_by("?").values_list("pair_id", flat=True)[0]  # a random pair, then a random suggestion of it
    return pair_id, candidate_queue(project, annotator, order).filter(pair_id=pair_id).values_list("pk", flat=True).first()


def _queue_next(project: AnnotationProject, annotator: AbstractBaseUser, order: str) -> tuple[QueueItem | None, int | None]:
    """The next item, and the suggestions left when reading the next one counted them (None when it did not)."""
    answered = _answered_gold_ids(project, annotator)
    same_item = {"simple_sentence": OuterRef("simple_sentence"), "complex_sentence": OuterRef("complex_sentence")}
    period = round(1 / project.test_item_rate) if project.test_item_rate > 0 else 0
    if period and (_labelled_item_count(project, annotator) + len(answered) + 1) % period == 0:
        gold = (
            GoldItem.objects.filter(project=project)
            .exclude(pk__in=answered)
            .filter(~Exists(_skipped(project, annotator).filter(**same_item)))
            .order_by("?")
            .select_related("simple_sentence", "complex_sentence")
            .first()
        )
        if gold is not None:
            return _gold_item(project, gold), None
    candidate_id, left = _next_candidate(project, annotator, order)
    if candidate_id is None:
        return None, left
    candidate = CandidateAlignment.objects.select_related("pair", "simple_sentence", "complex_sentence").get(pk=candidate_id)
    return _item("candidate", candidate.pk, candidate.pair, candidate.simple_sentence, candidate.complex_sentence, candidate), left


def queue_item_get(project: AnnotationProject, annotator: AbstractBaseUser, ref: str) -> QueueItem | None:
    """The item ``ref`` names (``candidate-ID`` or ``gold-ID``), if it is one this annotator may be served; else None."""
    kind, _, raw_id = ref.partition("-")
    if not raw_id.isdigit():
        return None
    if kind == "gold":
        gold = GoldItem.objects.filter(project=project, pk=int(raw_id)).select_related("simple_sentence", "complex_sentence").first()
        return _gold_item(project, gold) if gold is not None else None
    if kind != "candidate":
        return None
    pairs = Assignment.objects.filter(project=project, annotator=annotator).values("pair")
    candidate = (
        CandidateAlignment.objects.filter(pk=int(raw_id), run_id=project.suggestion_run_id, pair__in=pairs)
        .select_related("pair", "simple_sentence", "complex_sentence").first()
    )  # fmt: skip
    if candidate is None:
        return None
    return _item("candidate", candidate.pk, candidate.pair, candidate.simple_sentence, candidate.complex_sentence, candidate)


def _gold_item(project: AnnotationProject, gold: GoldItem) -> QueueItem:
    """A test item dressed as a candidate: with the suggestion run's candidate for it when the run has one."""
    pair = DocumentPair.objects.get(
        simple_document_id=gold.simple_sentence.document_id, complex_document_id=gold.complex_sentence.document_id
    )
    suggestion = CandidateAlignment.objects.filter(
        run_id=project.suggestion_run_id, simple_sentence_id=gold.simple_sentence_id, complex_sentence_id=gold.complex_sentence_id
    ).first()
    return _item("gold", gold.pk, pair, gold.simple_sentence, gold.complex_sentence, suggestion)


def queue_card(project: AnnotationProject, annotator: AbstractBaseUser, order: str, ref: str = "") -> dict[str, object]:
    """What the queue's card shows: the item ``ref`` names (else the next), its word diff, the aligner's confidence, what is left."""
    item, left = (queue_item_get(project, annotator, ref) if ref else None), None
    if item is None:
        item, left = _queue_next(project, annotator, order)
    suggestion = item.suggestion if item is not None else None
    return {
        "item": item,
        "diff": word_diff(item.complex.text, item.simple.text) if item is not None else None,
        "confidence": confidences(suggestion.run, [suggestion])[suggestion.pk] if suggestion is not None else None,
        "left": queue_left(project, annotator) if left is None else left,
    }


def _item(
    kind: str, item_id: int, pair: DocumentPair, simple: Sentence, complex_: Sentence, suggestion: CandidateAlignment | None
) -> QueueItem:
    return QueueItem(kind, item_id, pair, simple, complex_, _context(simple), _context(complex_), None, suggestion)


def _sentences_of(project: AnnotationProject, kind: str, item_id: int) -> tuple[DocumentPair, int, int]:
    """The document pair and (simple, complex) sentence ids of a queue item; ValueError naming it when it is none."""
    if kind == "gold":
        gold = GoldItem.objects.filter(project=project, pk=item_id).select_related("simple_sentence", "complex_sentence").first()
        if gold is None:
            raise ValueError(f"no test item {item_id} in project {project.name!r}")
        item = _gold_item(project, gold)
        return item.pair, gold.simple_sentence_id, gold.complex_sentence_id
    if kind != "candidate":
        raise ValueError(f"unknown queue item kind {kind!r}")
    candidate = CandidateAlignment.objects.filter(pk=item_id, run_id=project.suggestion_run_id).select_related("pair").first()
    if candidate is None:
        raise ValueError(f"no candidate {item_id} among the project's suggestions")
    return candidate.pair, candidate.simple_sentence_id, candidate.complex_sentence_id


def queue_skip(*, project: AnnotationProject, annotator: AbstractBaseUser, kind: str, item_id: int) -> ItemEvent:
    """Skip a queue item (key s): an item event; the item leaves the queue until an undo takes the skip back."""
    pair, simple_id, complex_id = _sentences_of(project, kind, item_id)
    if kind == "gold":
        _require_answering_role(project, annotator)
    return services.item_event_record(
        project=project,
        annotator=annotator,
        pair=pair,
        kind=ItemEvent.Kind.SKIP,
        simple_sentence_id=simple_id,
        complex_sentence_id=complex_id,
        test_item=kind == "gold",
    )


def queue_answer(
    *, project: AnnotationProject, annotator: AbstractBaseUser, kind: str, item_id: int, label: str, seconds_spent: float | None
) -> None:
    """Record the annotator's label for a queue item (a label event, or a gold answer for test items).

    Raises ValueError for bad input (naming the field) and PermissionError when the user's role
    does not answer: viewers only look, so their answers to test items are refused too.
    """
    labels.label_check(label)
    seconds_spent = services.seconds_spent_clean(seconds_spent)
    if kind == "gold":
        _require_answering_role(project, annotator)
        gold = GoldItem.objects.filter(project=project, pk=item_id).first()
        if gold is None:
            raise ValueError(f"no test item {item_id} in project {project.name!r}")
        GoldAnswer.objects.create(gold_item=gold, annotator=annotator, label=label, seconds_spent=seconds_spent)
        return
    if kind != "candidate":
        raise ValueError(f"unknown queue item kind {kind!r}")
    candidate = CandidateAlignment.objects.filter(pk=item_id, run_id=project.suggestion_run_id).select_related("pair").first()
    if candidate is None:
        raise ValueError(f"no candidate {item_id} among the project's suggestions")
    latest = labels.latest_event(project, annotator, candidate.simple_sentence_id, candidate.complex_sentence_id)
    services.label_record(
        project=project,
        annotator=annotator,
        pair=candidate.pair,
        simple_sentence_id=candidate.simple_sentence_id,
        complex_sentence_id=candidate.complex_sentence_id,
        label=label,
        expected_previous=latest.pk if latest else None,
        seconds_spent=seconds_spent,
    )


def _require_answering_role(project: AnnotationProject, user: AbstractBaseUser) -> None:
    role = (
        ProjectMembership.Role.MANAGER if user.is_staff
        else ProjectMembership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    )  # fmt: skip
    if role not in (ProjectMembership.Role.ANNOTATOR, ProjectMembership.Role.MANAGER):
        raise PermissionError(
            f"{user} is {role or 'not a member'} in project {project.name!r}; only annotators and managers answer test items"
        )


def queue_undo(*, project: AnnotationProject, annotator: AbstractBaseUser) -> QueueUndo:
    """Undo the annotator's latest queue action (label event, gold answer or skip): what was undone, and
    the item it brought back, so the page can show it again."""
    with transaction.atomic():
        undone = set(
            LabelEvent.objects.filter(project=project, annotator=annotator, undoes__isnull=False).values_list("undoes_id", flat=True)
        )
        event = labels.own_events(project, annotator=annotator, undoes__isnull=True).exclude(pk__in=undone).order_by("-pk").first()
        answer = GoldAnswer.objects.filter(gold_item__project=project, annotator=annotator).order_by("-pk").first()
        skip = _skipped(project, annotator).order_by("-pk").first()
        if answer is not None and not answer.label:
            answer = None  # already withdrawn
        latest = max((x for x in (event, answer, skip) if x is not None), key=lambda x: x.created_at, default=None)
        if latest is None:
            return QueueUndo("nothing to undo")
        if latest is answer:
            GoldAnswer.objects.create(gold_item=answer.gold_item, annotator=annotator, label="")
            return QueueUndo("the last answer was withdrawn", f"gold-{answer.gold_item_id}")
        if latest is skip:
            services.item_skip_undo(skip=skip)
            return QueueUndo("the last skip was undone", _ref_of(project, skip.simple_sentence_id, skip.complex_sentence_id))
        services.label_undo(project=project, annotator=annotator, pair=event.pair)
        return QueueUndo("the last label was undone", _ref_of(project, event.simple_sentence_id, event.complex_sentence_id))


def _ref_of(project: AnnotationProject, simple_id: int, complex_id: int) -> str | None:
    """The queue item of a sentence pair: its test item, else the suggestion run's candidate, else None."""
    gold_id = (
        GoldItem.objects.filter(project=project, simple_sentence_id=simple_id, complex_sentence_id=complex_id)
        .values_list("pk", flat=True)
        .first()
    )
    if gold_id is not None:
        return f"gold-{gold_id}"
    candidate_id = (
        CandidateAlignment.objects.filter(run_id=project.suggestion_run_id, simple_sentence_id=simple_id, complex_sentence_id=complex_id)
        .values_list("pk", flat=True).first()
    )  # fmt: skip
    return f"candidate-{candidate_id}" if candidate_id is not None else None
