"""Training snapshots: the labels a model learns from, frozen, with a sticky document-level split.

What counts as training data:

- document pairs a reviewer *verified* (every item adjudicated or agreed): each labelled
  sentence pair with its final label (:func:`annotation.adjudication.review.pair_item_states`);
- document pairs whose labels were *imported* as gold (label events with source "import"),
  when not verified in the app: each item's latest imported label.

Sentence pairs nobody linked are "not aligned" for the aligner (they lie outside every gold
group), which is how the CRF's gold states are built from alignments in the papers too.

An item of a verified pair can be open again (no final label: a label changed after the pair was verified, or it awaits
a reviewer's decision). It is kept with the label None, so it links nothing (the aligner takes it as not aligned), but it
is not a label: the counts per label leave it out and report it apart, as "open" (:func:`_settled`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Count, Q

from alignment.aligning.reading import side_sentences
from alignment.models import DocumentPair
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
    from annotation.labelling.quality import flagged_annotator_ids

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


def _settled(counts: Counter) -> tuple[Counter, int]:
    """The counts per final label, and apart how many items are open (label None): they have no label to count, sort or
    show as one."""
    labels = Counter(counts)
    return labels, labels.pop(None, 0)


def _check(project: AnnotationProject, items: list[list]) -> Counter:
    """Enough document pairs and labels, and both classes: linked pairs and pairs that are not linked.

    Negatives are explicit "not aligned" labels or implicit: in a verified (or imported) document
    pair, every sentence pair nobody linked. So one class means nothing is linked at all, or every
    sentence pair of every document pair is linked.
    """
    labels, _ = _settled(Counter(item[3] for item in items))
    pairs = {item[0] for item in items}
    _check_figures(project, labels, pairs)
    return labels


_CELLS_SQL = """
    SELECT coalesce(sum((SELECT count(*) FROM alignment_sentence s WHERE s.document_id = p.simple_document_id AND s.retired_by_id IS NULL)
                        * (SELECT count(*) FROM alignment_sentence s WHERE s.document_id = p.complex_document_id AND s.retired_by_id IS NULL)), 0)
    FROM alignment_documentpair p WHERE p.id = ANY(%s)
"""  # the sentence pairs of the document pairs: one row from the database, however many pairs


def _check_figures(project: AnnotationProject, labels: Counter, pairs: set[int]) -> None:
    """:func:`_check` from the counts per label and the document pairs they are in."""
    total = sum(labels.values())
    if len(pairs) < MIN_PAIRS or total < MIN_LABELS:
        raise TrainingDataError(
            f"too few labels to train: needs at least {MIN_PAIRS} verified (or imported) document pairs, one each for "
            f"train, dev and test, and at least {MIN_LABELS} labelled sentence pairs; project {project.name!r} has "
            f"{len(pairs)} such document pair(s) with {total} label(s). Verify more pairs on the review page."
        )
    linked = sum(count for label, count in labels.items() if label in POSITIVE)
    if linked == 0:
        raise TrainingDataError(
            f"only one class present: all {total} labels are 'not_aligned', so there is no alignment to learn; "
            f"training needs aligned or partial links"
        )
    if labels.get(NOT_ALIGNED):
        return
    with connection.cursor() as cursor:
        cursor.execute(_CELLS_SQL, [sorted(pairs)])
        (cells,) = cursor.fetchone()
    if linked >= cells:
        raise TrainingDataError(
            f"only one class present: every one of the {cells} sentence pairs of the {len(pairs)} document pairs is linked; "
            f"training needs sentence pairs that are not aligned too"
        )


def snapshot_preview(project: AnnotationProject, *, seed: int = 0) -> dict:
    """What a snapshot taken now would hold (counts per label and split), or the reason it cannot be taken: counted in
    PostgreSQL (:func:`gold_label_counts`), not item by item."""
    by_pair = gold_label_counts(project)
    labels, open_items = _settled(sum(by_pair.values(), Counter()))
    try:
        _check_figures(project, labels, set(by_pair))
    except TrainingDataError as error:
        return {"error": str(error), "labels": dict(labels), "pairs": len(by_pair), "open": open_items}
    splits = _splits_of(project, by_pair, seed)
    by_split = {name: Counter() for name in SPLITS}
    for pair_id, counts in by_pair.items():
        by_split[splits[str(pair_id)]].update(_settled(counts)[0])
    return {
        "error": "",
        "labels": dict(sorted(labels.items())),
        "open": open_items,
        "pairs": {name: sum(1 for v in splits.values() if v == name) for name in SPLITS},
        "labels_by_split": {name: dict(sorted(counter.items())) for name, counter in by_split.items()},
    }


# gold_items' rules, counted in the database: per document pair of the project, its gold items per label. A verified pair's
# items are those some annotator labels now or a reviewer adjudicated, each with its final label (the latest adjudication,
# else the label every counted annotator gives when they agree: their current label, "not aligned" where they marked the
# pair done without one; NULL while open). An unverified pair's items are those with an imported current label.
_GOLD_COUNTS_SQL = """
    WITH project_pairs AS (
        SELECT documentpair_id AS pair_id FROM annotation_annotationproject_pairs WHERE annotationproject_id = %(project)s
    ), verified AS (
        SELECT latest.pair_id FROM (
            SELECT DISTINCT ON (v.pair_id) v.pair_id, v.verified FROM annotation_pairverification v
            WHERE v.project_id = %(project)s ORDER BY v.pair_id, v.id DESC
        ) latest WHERE latest.verified AND latest.pair_id IN (SELECT pair_id FROM project_pairs)
    ), latest AS (
        SELECT DISTINCT ON (e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id)
               e.id, e.annotator_id, e.pair_id, e.simple_sentence_id AS simple_id, e.complex_sentence_id AS complex_id,
               e.new_label AS label, e.source
        FROM annotation_labelevent e
        WHERE e.project_id = %(project)s AND e.source <> 'adjudication' AND e.pair_id IN (SELECT pair_id FROM project_pairs)
          AND (e.pair_id IN (SELECT pair_id FROM verified) OR e.pair_id IN (
               SELECT i.pair_id FROM annotation_labelevent i WHERE i.project_id = %(project)s AND i.source = 'import'))
        ORDER BY e.annotator_id, e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.id DESC
    ), adjudicated AS (
        SELECT DISTINCT ON (e.pair_id, e.simple_sentence_id, e.complex_sentence_id)
               e.pair_id, e.simple_sentence_id AS simple_id, e.complex_sentence_id AS complex_id, e.new_label AS label
        FROM annotation_labelevent e
        WHERE e.project_id = %(project)s AND e.source = 'adjudication' AND e.pair_id IN (SELECT pair_id FROM verified)
        ORDER BY e.pair_id, e.simple_sentence_id, e.complex_sentence_id, e.id DESC
    ), counted AS (
        SELECT a.pair_id, a.annotator_id, a.completed_at IS NOT NULL AS done FROM annotation_assignment a
        WHERE a.project_id = %(project)s AND a.pair_id IN (SELECT pair_id FROM verified) AND NOT (a.annotator_id = ANY(%(flagged)s))
    ), items AS (
        SELECT pair_id, simple_id, complex_id FROM latest WHERE label <> '' AND pair_id IN (SELECT pair_id FROM verified)
        UNION SELECT pair_id, simple_id, complex_id FROM adjudicated
    ), given AS (
        SELECT i.pair_id, i.simple_id, i.complex_id, counted.annotator_id,
               coalesce(nullif(latest.label, ''), CASE WHEN counted.done THEN 'not_aligned' END) AS label
        FROM items i
        LEFT JOIN counted ON counted.pair_id = i.pair_id
        LEFT JOIN latest ON latest.annotator_id = counted.annotator_id AND latest.pair_id = i.pair_id
                        AND latest.simple_id = i.simple_id AND latest.complex_id = i.complex_id
    ), finals AS (
        SELECT given.pair_id, CASE
            WHEN bool_or(adjudicated.pair_id IS NOT NULL) THEN min(adjudicated.label)
            WHEN NOT %(adjudicate_all)s AND count(given.annotator_id) > 0 AND count(given.label) = count(given.annotator_id)
                 AND count(DISTINCT given.label) = 1 THEN min(given.label)
            END AS label
        FROM given LEFT JOIN adjudicated ON adjudicated.pair_id = given.pair_id AND adjudicated.simple_id = given.simple_id
                                        AND adjudicated.complex_id = given.complex_id
        GROUP BY given.pair_id, given.simple_id, given.complex_id
    ), imported AS (
        SELECT DISTINCT ON (pair_id, simple_id, complex_id) pair_id, label FROM latest
        WHERE source = 'import' AND label <> '' AND pair_id NOT IN (SELECT pair_id FROM verified)
        ORDER BY pair_id, simple_id, complex_id, id DESC
    )
    SELECT pair_id, label, count(*) FROM (SELECT pair_id, label FROM finals UNION ALL SELECT pair_id, label FROM imported) gold
    GROUP BY pair_id, label
"""


def gold_label_counts(project: AnnotationProject) -> dict[int, Counter]:
    """Document pair id -> label -> the pair's gold items with that label (None: still open): :func:`gold_items`'
    items counted in one query (tests/annotation/test_training_preview.py checks that the two agree)."""
    from annotation.labelling.quality import flagged_annotator_ids

    flagged = sorted(flagged_annotator_ids(project)) if project.exclude_flagged else []
    params = {"project": project.pk, "flagged": flagged, "adjudicate_all": project.adjudicate_all}
    by_pair: dict[int, Counter] = {}
    with connection.cursor() as cursor:
        cursor.execute(_GOLD_COUNTS_SQL, params)
        for pair_id, label, count in cursor.fetchall():
            by_pair.setdefault(pair_id, Counter())[label] = count
    return dict(sorted(by_pair.items()))


def _splits(project: AnnotationProject, items: list[list], seed: int) -> dict[str, str]:
    return _splits_of(project, {item[0] for item in items}, seed)


def _splits_of(project: AnnotationProject, pair_ids: Iterable[int], seed: int) -> dict[str, str]:
    previous = TrainingSnapshot.objects.filter(project=project, seed=seed).order_by("-pk").values_list("splits", flat=True).first()
    keys = sorted({str(pair_id) for pair_id in pair_ids}, key=int)
    return {str(k): v for k, v in assign_splits(keys, seed=seed, previous=previous or {}).items()}


def _counts(items: list[list], splits: dict[str, str]) -> dict:
    """The snapshot's counts per label (overall and per split) and document pairs per split; open items apart."""
    labels, open_items = _settled(Counter(item[3] for item in items))
    by_split = {name: Counter() for name in SPLITS}
    for item in items:
        if item[3] is not None:
            by_split[splits[str(item[0])]][item[3]] += 1
    return {
        "labels": dict(sorted(labels.items())),
        "open": open_items,
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
