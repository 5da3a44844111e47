"""Quality control: each annotator's accuracy on the gold test items the queue mixes in (flagged below the project's
threshold), and test items made from the settled items of verified pairs."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Avg

from annotation import labels
from annotation.adjudication.review import pair_item_states
from annotation.models import AnnotationProject, GoldAnswer, GoldItem, LabelEvent

MIN_ANSWERS_TO_FLAG = 5


def _latest_gold_answers(project: AnnotationProject) -> dict[tuple[int, int], GoldAnswer]:
    """(gold item id, annotator id) -> latest answer."""
    answers: dict[tuple[int, int], GoldAnswer] = {}
    for answer in GoldAnswer.objects.filter(gold_item__project=project).select_related("gold_item").order_by("pk"):
        answers[(answer.gold_item_id, answer.annotator_id)] = answer
    return answers


@dataclass
class Accuracy:
    annotator: AbstractBaseUser
    answered: int
    correct: int
    seconds_per_item: float | None
    flagged: bool

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


def _gold_totals(project: AnnotationProject) -> dict[int, list[int]]:
    """Annotator id -> [test items answered, answered right], by their latest answer to each."""
    totals: dict[int, list[int]] = {}
    for (_gold_id, user_id), answer in _latest_gold_answers(project).items():
        if answer.label:
            counts = totals.setdefault(user_id, [0, 0])
            counts[0] += 1
            counts[1] += int(answer.label == answer.gold_item.label)
    return totals


def _flagged(project: AnnotationProject, answered: int, correct: int) -> bool:
    return answered >= MIN_ANSWERS_TO_FLAG and correct / answered < project.accuracy_threshold


def annotator_accuracy(project: AnnotationProject) -> list[Accuracy]:
    """Accuracy on gold test items per annotator; flagged below the project's threshold (after 5 answers)."""
    from django.contrib.auth import get_user_model

    totals = _gold_totals(project)
    seconds = dict(  # mean seconds per label, in the database rather than over every event in Python
        LabelEvent.objects.filter(project=project, seconds_spent__isnull=False, seconds_spent__lte=settings.ANNOTATION_IDLE_SECONDS)
        .order_by()
        .values("annotator_id")
        .annotate(mean=Avg("seconds_spent"))
        .values_list("annotator_id", "mean")
    )
    users = get_user_model().objects.in_bulk(set(totals) | set(seconds))
    rows = []
    for user_id, user in sorted(users.items(), key=lambda item: item[1].get_username()):
        answered, correct = totals.get(user_id, [0, 0])
        rows.append(Accuracy(user, answered, correct, seconds.get(user_id), _flagged(project, answered, correct)))
    return rows


def flagged_annotator_ids(project: AnnotationProject) -> set[int]:
    """The annotators :func:`annotator_accuracy` flags, from their test answers alone (not their seconds per label)."""
    return {user_id for user_id, (answered, correct) in _gold_totals(project).items() if _flagged(project, answered, correct)}


def gold_items_from_verified(project: AnnotationProject) -> int:
    """Turn the settled items of the project's verified pairs into gold test items; returns how many are new."""
    created = 0
    flagged = flagged_annotator_ids(project) if project.exclude_flagged else set()
    for pair in project.pairs.all():
        if labels.pair_verified(project, pair) is None:
            continue
        with transaction.atomic():
            new_here = 0
            for state in pair_item_states(project, pair, flagged=flagged):
                if state.final:
                    _, new = GoldItem.objects.get_or_create(
                        project=project, simple_sentence=state.simple, complex_sentence=state.complex, defaults={"label": state.final}
                    )
                    new_here += int(new)
            if new_here:  # test items leave every annotator's queue
                labels.assignments_recount(project, pair_ids=[pair.pk])
        created += new_here
    return created
