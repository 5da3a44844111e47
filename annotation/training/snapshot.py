"""Training snapshots: the labels a model learns from, frozen, with a sticky document-level split.

What counts as training data:

- document pairs a reviewer *verified* (every item adjudicated or agreed): each labelled
  sentence pair with its final label (:func:`annotation.adjudication.review.pair_item_states`);
- document pairs whose labels were *imported* as gold (label events with source "import"),
  when not verified in the app: each item's latest imported label.

Sentence pairs nobody linked are "not aligned" for the aligner (they lie outside every gold
group), which is how the CRF's gold states are built from alignments in the papers too.
"""

from __future__ import annotations

from collections import Counter

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from alignment.aligning.service import side_sentences
from alignment.models import DocumentPair, Sentence
from annotation.adjudication.review import pair_item_states
from annotation.labels import LINKED_LABELS, NOT_ALIGNED, imported_label, latest_label_events, pair_verified
from annotation.models import AnnotationProject, Assignment
from annotation.training.models import TrainingSnapshot
from models_ml.data.io import GoldPair, connected_groups
from models_ml.data.splits import SPLITS, assign_splits

MIN_PAIRS = 3  # one document pair each for train, dev and test
MIN_LABELS = 10
POSITIVE = LINKED_LABELS


class TrainingDataError(ValueError):
    """The project's labels cannot train a model; the message says what is missing."""


def finished_pair_ids(project: AnnotationProject) -> set[int]:
    """Pairs every annotator assigned to them marked done."""
    counts = Assignment.objects.filter(project=project).values("pair_id").annotate(open=Count("pk", filter=Q(completed_at__isnull=True)))
    return {row["pair_id"] for row in counts if row["open"] == 0}


def gold_items(project: AnnotationProject, *, finished: bool = False) -> tuple[list[list], list[int]]:
    """([pair id, simple id, complex id, label], ...) and the ids of the label events behind them.

    ``finished`` (automatic adaptation): also the pairs every assigned annotator marked done, with the labels
    review gives them (agreed or adjudicated); such a pair with an item still in disagreement waits for review.
    """
    from annotation.labelling.queue import flagged_annotator_ids

    flagged = flagged_annotator_ids(project) if project.exclude_flagged else set()
    done = finished_pair_ids(project) if finished else set()
    items: list[list] = []
    event_ids: list[int] = []
    for pair in project.pairs.order_by("pk"):
        latest: dict[tuple[int, int], list[tuple[int, str, str]]] = {}  # item -> each annotator's (event id, label, source)
        for pk, simple_id, complex_id, label, source in latest_label_events(project, pair=pair).values_list(
            "pk", "simple_sentence_id", "complex_sentence_id", "new_label", "source"
        ):
            latest.setdefault((simple_id, complex_id), []).append((pk, label, source))
        verified = pair_verified(project, pair) is not None
        if verified or pair.pk in done:
            states = pair_item_states(project, pair, flagged=flagged)
            if not verified and any(state.final is None for state in states):
                continue
            for state in states:
                key = (state.simple.pk, state.complex.pk)
                items.append([pair.pk, *key, state.final])
                if state.adjudication is not None:
                    event_ids.append(state.adjudication.pk)
                else:
                    event_ids.extend(pk for pk, _, _ in latest.get(key, []))
            continue
        for key, events in sorted(latest.items()):
            imported = imported_label(events)
            if imported:
                pk, label = imported
                items.append([pair.pk, *key, label])
                event_ids.append(pk)
    return items, sorted(set(event_ids))


def _check(project: AnnotationProject, items: list[list]) -> Counter:
    """Enough document pairs and labels, and both classes: linked pairs and pairs that are not linked.

    Negatives are explicit "not aligned" labels or implicit: in a verified (or imported) document
    pair, every sentence pair nobody linked. So one class means nothing is linked at all, or every
    sentence pair of every document pair is linked.
    """
    labels = Counter(item[3] for item in items)
    pairs = {item[0] for item in items}
    if len(pairs) < MIN_PAIRS or len(items) < MIN_LABELS:
        raise TrainingDataError(
            f"too few labels to train: needs at least {MIN_PAIRS} verified (or imported) document pairs, one each for "
            f"train, dev and test, and at least {MIN_LABELS} labelled sentence pairs; project {project.name!r} has "
            f"{len(pairs)} such document pair(s) with {len(items)} label(s). Verify more pairs on the review page."
        )
    linked = sum(count for label, count in labels.items() if label in POSITIVE)
    if linked == 0:
        raise TrainingDataError(
            f"only one class present: all {len(items)} labels are 'not_aligned', so there is no alignment to learn; "
            f"training needs aligned or partial links"
        )
    document_pairs = list(DocumentPair.objects.filter(pk__in=pairs).values_list("simple_document_id", "complex_document_id"))
    sizes = dict(
        Sentence.objects.filter(document_id__in={d for pair in document_pairs for d in pair})
        .values_list("document_id")
        .annotate(n=Count("pk"))
        .values_list("document_id", "n")
    )  # one query for every document's sentence count
    cells = sum(sizes.get(simple, 0) * sizes.get(complex_, 0) for simple, complex_ in document_pairs)
    if linked >= cells and not labels.get(NOT_ALIGNED):
        raise TrainingDataError(
            f"only one class present: every one of the {cells} sentence pairs of the {len(pairs)} document pairs is linked; "
            f"training needs sentence pairs that are not aligned too"
        )
    return labels


def snapshot_preview(project: AnnotationProject, *, seed: int = 0) -> dict:
    """What a snapshot taken now would hold (counts per label and split), or the reason it cannot be taken."""
    items, _ = gold_items(project)
    try:
        _check(project, items)
    except TrainingDataError as error:
        return {"error": str(error), "labels": dict(Counter(i[3] for i in items)), "pairs": len({i[0] for i in items})}
    splits = _splits(project, items, seed)
    return {"error": "", **_counts(items, splits)}


def _splits(project: AnnotationProject, items: list[list], seed: int) -> dict[str, str]:
    previous = TrainingSnapshot.objects.filter(project=project, seed=seed).order_by("-pk").values_list("splits", flat=True).first()
    keys = sorted({str(item[0]) for item in items}, key=int)
    return {str(k): v for k, v in assign_splits(keys, seed=seed, previous=previous or {}).items()}


def _counts(items: list[list], splits: dict[str, str]) -> dict:
    by_split = {name: Counter() for name in SPLITS}
    for item in items:
        by_split[splits[str(item[0])]][item[3]] += 1
    return {
        "labels": dict(sorted(Counter(item[3] for item in items).items())),
        "pairs": {name: sum(1 for v in splits.values() if v == name) for name in SPLITS},
        "labels_by_split": {name: dict(sorted(counter.items())) for name, counter in by_split.items()},
    }


def snapshot_create(*, project: AnnotationProject, seed: int = 0, created_by: AbstractBaseUser | None = None) -> TrainingSnapshot:
    """Freeze the project's gold now; raises TrainingDataError when it cannot train a model."""
    with transaction.atomic():
        AnnotationProject.objects.select_for_update().get(pk=project.pk)  # one snapshot at a time: sticky splits stay consistent
        items, event_ids = gold_items(project)
        _check(project, items)
        splits = _splits(project, items, seed)
        return TrainingSnapshot.objects.create(
            project=project, seed=seed, splits=splits, items=items, label_event_ids=event_ids,
            counts=_counts(items, splits), created_by=created_by,
        )  # fmt: skip


def finished_snapshot(project: AnnotationProject, *, seed: int = 0) -> TrainingSnapshot:
    """The labels of the project's finished pairs (:func:`gold_items` with ``finished``) for automatic adaptation, as an
    unsaved snapshot (saved only with the version it makes). Adaptation judges leave-one-pair-out, so one pair is enough;
    TrainingDataError when no finished pair has labels. The splits are the project's sticky ones."""
    items, event_ids = gold_items(project, finished=True)
    if not items:
        raise TrainingDataError(
            f"no finished pair of project {project.name!r} has settled labels yet: a pair counts once every annotator "
            f"assigned to it marked it done and they agree on every label (or a reviewer settled it)"
        )
    splits = _splits(project, items, seed)
    return TrainingSnapshot(
        project=project, seed=seed, splits=splits, items=items, label_event_ids=event_ids, counts=_counts(items, splits)
    )


def snapshot_gold_pairs(snapshot: TrainingSnapshot, split: str | None) -> list[GoldPair]:
    """The snapshot's document pairs of one split (None: every pair) as gold for models_ml (groups from its aligned/partial items)."""
    by_pair: dict[int, list[list]] = {}
    for item in snapshot.items:
        by_pair.setdefault(int(item[0]), []).append(item)
    gold = []
    pair_ids = snapshot.pair_ids(split) if split is not None else sorted(by_pair)
    for pair in DocumentPair.objects.filter(pk__in=pair_ids).select_related("complex_document").order_by("pk"):
        simple = side_sentences(pair.simple_document_id, "")
        complex_side = side_sentences(pair.complex_document_id, "")
        simple_index = {pk: k for k, pk in enumerate(simple.ids)}
        complex_index = {pk: k for k, pk in enumerate(complex_side.ids)}
        links = [
            (complex_index[c], simple_index[s], label)
            for _, s, c, label in by_pair.get(pair.pk, [])
            if label in POSITIVE and s in simple_index and c in complex_index
        ]
        gold.append(
            GoldPair(
                f"pair-{pair.pk}", complex_side.texts, simple.texts, connected_groups(links),
                complex_side.paragraphs, simple.paragraphs, domain=pair_domain(pair),
            )
        )  # fmt: skip
    return gold


def pair_domain(pair: DocumentPair) -> str:
    """The pair's domain (its complex document's ``source["domain"]``, set by gold import), "" when unknown."""
    return str(pair.complex_document.source.get("domain", "") or "")
