"""Removing what runs stored for some pairs, when the pairs changed under them (a flip, a sentence edit)."""

from __future__ import annotations

from collections.abc import Collection

from django.db import transaction
from django.db.models import Count, F, Sum

from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, PairBlock, ParagraphAlignment
from alignment.signals import run_finished


def pair_results_remove(pair_ids: list[int], *, keep_scope: Collection[int] = ()) -> int:
    """Remove the pairs' results and take them out of every run's scope but ``keep_scope``'s (those runs will store
    them again), keeping each run's counts true. Returns how many (run, pair) results went. The runs are locked
    first, so a worker storing one of these pairs either finished before (its result is removed here) or waits and
    then finds the pair gone from its run."""
    scope = AlignmentRun.pairs.through.objects.filter(documentpair_id__in=pair_ids)
    runs = {run.pk: run for run in AlignmentRun.objects.select_for_update().filter(pk__in=scope.values("alignmentrun_id"))}
    leaving = scope.exclude(alignmentrun_id__in=list(keep_scope))
    in_scope = dict(leaving.values_list("alignmentrun_id").annotate(n=Count("pk")))
    aligned = AlignedPair.objects.filter(pair_id__in=pair_ids)
    done = {
        row["run_id"]: row
        for row in aligned.values("run_id").annotate(n=Count("pk"), sentences=Sum(F("simple_count") + F("complex_count")))
    }
    by_label: dict[int, dict[str, int]] = {}
    for run_id, label, count in (
        CandidateAlignment.objects.filter(pair_id__in=pair_ids).values_list("run_id", "label").annotate(Count("pk"))
    ):
        by_label.setdefault(run_id, {})[label] = count
    for run_id, run in runs.items():
        labels = by_label.get(run_id, {})
        counts = {label: n - labels.get(label, 0) for label, n in run.label_counts.items() if n - labels.get(label, 0) > 0}
        AlignmentRun.objects.filter(pk=run_id).update(
            pairs_total=F("pairs_total") - in_scope.get(run_id, 0), pairs_done=F("pairs_done") - done.get(run_id, {}).get("n", 0),
            sentences_done=F("sentences_done") - (done.get(run_id, {}).get("sentences") or 0),
            candidates_written=F("candidates_written") - sum(labels.values()), label_counts=counts,
        )  # fmt: skip
        if (
            run.status == AlignmentRun.Status.QUEUED
            and run.pairs_total == in_scope.get(run_id, 0)
            and run.mark_cancelled(error="its pairs were changed before it started; the change queued a run of its own")
        ):
            transaction.on_commit(lambda run=run: run_finished.send(sender=AlignmentRun, run=run))
    removed = aligned.count()
    CandidateAlignment.objects.filter(pair_id__in=pair_ids).delete()
    ParagraphAlignment.objects.filter(pair_id__in=pair_ids).delete()
    PairBlock.objects.filter(pair_id__in=pair_ids).delete()
    aligned.delete()
    leaving.delete()
    return removed
