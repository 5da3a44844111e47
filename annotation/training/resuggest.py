"""Re-suggesting only the pairs nobody has started, after an automatic adaptation.

A project shows the suggestions of one alignment run. A promotion re-aligns every pair; an automatic
adaptation must not change what anyone is working on, so it queues a run over the *unstarted* pairs
alone (no label event by anyone, imports and adjudications included; no skip, flag, comment or paragraph
correction; no assignment marked done). When that run succeeds, just before it becomes the project's
suggestion run (:func:`annotation.training.registry.suggestions_switch`), every pair started by then
gets a copy of the rows the current suggestion run stored for it (paragraph groups, candidates, the
pair's matrices), replacing what the new run stored if someone started it meanwhile. So a started
pair's suggestions never change, and the old run is left exactly as it was. The new run's config names,
per copied pair, the run that made its rows (``kept_from``, :func:`annotation.provenance.origin_run`):
labels made on them cite that run's model, and the screen re-decodes them with it. The new run's page counts
the copied pairs as its own; the adaptation job's record says which pairs were re-suggested.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Count, F, Sum

from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, ParagraphAlignment
from annotation.models import AnnotationProject, Assignment, ItemEvent, LabelEvent, ParagraphCorrection
from annotation.provenance import KEPT_FROM
from annotation.training.models import AdaptationJob

PER_PAIR_ROWS = (AlignedPair, ParagraphAlignment, CandidateAlignment)  # what a run stores for one pair


def started_pair_ids(project: AnnotationProject) -> set[int]:
    """Pairs of the project someone has started: any label event, item event or paragraph correction, or a pair marked done."""
    started: set[int] = set()
    for model in (LabelEvent, ItemEvent, ParagraphCorrection):
        started |= set(model.objects.filter(project=project).values_list("pair_id", flat=True).distinct())
    started |= set(Assignment.objects.filter(project=project, completed_at__isnull=False).values_list("pair_id", flat=True))
    return started


def unstarted_pair_ids(project: AnnotationProject) -> set[int]:
    return set(project.pairs.values_list("pk", flat=True)) - started_pair_ids(project)


def started_pairs_keep(project: AnnotationProject, run: AlignmentRun) -> None:
    """Give ``run`` the current suggestions of every started pair (nothing for a run that is no adaptation's).

    The caller holds the project's row lock, in the transaction that then switches the suggestion run.
    """
    if not AdaptationJob.objects.filter(project=project, alignment_run=run).exists():
        return
    current = project.suggestion_run_id
    started = started_pair_ids(project) & set(project.pairs.values_list("pk", flat=True))
    for model in PER_PAIR_ROWS:
        model.objects.filter(run=run, pair_id__in=started).delete()
    shown = set(AlignedPair.objects.filter(run_id=current, pair_id__in=started).values_list("pair_id", flat=True)) if current else set()
    for model in PER_PAIR_ROWS:
        copy_rows(model, current, run.pk, shown)
    if shown:
        origins = (project.suggestion_run.config or {}).get(KEPT_FROM, {})
        config = {**run.config, KEPT_FROM: {str(pair): origins.get(str(pair), current) for pair in sorted(shown)}}
        AlignmentRun.objects.filter(pk=run.pk).update(config=config)
        run.config = config
    run.pairs.remove(*(started - shown))  # started before any run aligned them: they keep having no suggestions
    run.pairs.add(*shown)
    run_recount(run)


def copy_rows(model: type[models.Model], source_id: int | None, target_id: int, pair_ids: set[int]) -> None:
    if source_id is None or not pair_ids:
        return
    fields = [field.attname for field in model._meta.concrete_fields if field.attname not in ("id", "run_id")]
    rows = model.objects.filter(run_id=source_id, pair_id__in=pair_ids).order_by("pk").values(*fields)
    model.objects.bulk_create((model(run_id=target_id, **row) for row in rows), batch_size=2000)


def run_recount(run: AlignmentRun) -> None:
    """The run's figures over what it now holds, its own pairs and the copied ones."""
    aligned = AlignedPair.objects.filter(run=run).aggregate(n=Count("pk"), sentences=Sum(F("simple_count") + F("complex_count")))
    labels = dict(CandidateAlignment.objects.filter(run=run).values_list("label").annotate(n=Count("pk")).values_list("label", "n"))
    AlignmentRun.objects.filter(pk=run.pk).update(
        pairs_total=run.pairs.count(), pairs_done=aligned["n"], sentences_done=aligned["sentences"] or 0,
        candidates_written=sum(labels.values()), label_counts=dict(sorted(labels.items())),
    )  # fmt: skip
