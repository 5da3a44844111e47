"""Bulk accept: every suggestion of a pair at or above the project's threshold, in one key, guarded by measured precision.

The threshold is chosen per project for its precision target (``AnnotationProject.bulk_precision_target``, set by
a manager, .97 unless changed) from the project's own **answered suggestions** (:mod:`annotation.labelling.bulk_estimate`
says what counts and how the estimate and threshold are made). They are read from the ``BULK_ESTIMATE_PAIRS``
assignments marked done most recently, whoever did them: one query of at most that many pairs' suggestions, whatever
the project's size. The answer is kept until another assignment is marked done, the target or the suggestion run
changes, or a reviewer decides a sentence pair (a label changed on a pair already done is counted at the next one).

Until the project has :data:`~annotation.labelling.bulk_estimate.MIN_ANSWERED` answers above a threshold that meets
its target, the estimate falls back on the suggestion run's model's **held-out calibration** (``calibration.json``
beside its weights, :mod:`models_ml.aligning.calibration`; the shipped model has one) **while the project has too few
answers to judge**: fewer than ``MIN_ANSWERED`` at the threshold the calibration chooses. A project with that many
answers there, which do not meet its target, is not offered bulk accept: its own labels say the model is wrong more
often there than on its held-out documents. Without either, bulk accept is not offered, and the screen and the
project page say how many answers there are.

A bulk accept is one edit (one ``u`` undoes it). Each of its labels has source ``bulk``, and its provenance
(``LabelEvent.suggestion["bulk"]``) records the threshold and the estimate at it **as the server computed it when
the edit was saved**: the screen says which threshold it used, never what it estimated.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.core.cache import caches
from django.db import connection
from django.db.models import Count, Max

from alignment.errors import ServiceError
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, Sentence
from annotation.labelling import bulk_estimate
from annotation.labelling.bulk_estimate import PrecisionEstimate, estimate_at, offer_threshold
from annotation.models import AnnotationProject, Assignment, LabelEvent
from annotation.provenance import KEPT_FROM
from models_ml.aligning.calibration import calibration_read

BULK_ESTIMATE_PAIRS = 200  # the most recently done assignments an estimate reads
TARGET_MIN, TARGET_MAX = 0.5, 0.999
CACHE_SECONDS = 24 * 3600

_ANSWERS_SQL = """
WITH done AS (
    SELECT d.pair_id, d.annotator_id, d.completed_at, (
        SELECT e.suggestion_run_id FROM {event} e
        WHERE e.project_id = %(project)s AND e.annotator_id = d.annotator_id AND e.pair_id = d.pair_id
          AND e.source <> 'adjudication'
        ORDER BY e.id DESC LIMIT 1
    ) AS shown_run, EXISTS (
        SELECT 1 FROM {event} e
        WHERE e.project_id = %(project)s AND e.annotator_id = d.annotator_id AND e.pair_id = d.pair_id
          AND e.source <> 'adjudication'
    ) AS labelled
    FROM {assignment} d
    WHERE d.project_id = %(project)s AND d.completed_at IS NOT NULL
    ORDER BY d.completed_at DESC, d.id DESC LIMIT %(pairs)s
)
SELECT
    CASE WHEN ap.viterbi IS NULL OR (ap.viterbi -> ss.index) @> to_jsonb(cs.index)
         THEN c.crf_marginal ELSE coalesce(c.group_score, c.crf_marginal) END,
    c.label, latest.new_label, latest.source, checked.new_label,
    c.pair_id, CASE WHEN latest.source IS NULL THEN done.shown_run ELSE latest.suggestion_run_id END,
    done.labelled, done.completed_at
FROM done
JOIN {candidate} c ON c.run_id = %(run)s AND c.pair_id = done.pair_id AND c.label IN ('aligned', 'partial')
JOIN {sentence} ss ON ss.id = c.simple_sentence_id
JOIN {sentence} cs ON cs.id = c.complex_sentence_id
LEFT JOIN {aligned} ap ON ap.run_id = c.run_id AND ap.pair_id = c.pair_id
LEFT JOIN LATERAL (
    SELECT e.new_label, e.source, e.suggestion_run_id FROM {event} e
    WHERE e.project_id = %(project)s AND e.pair_id = c.pair_id AND e.annotator_id = done.annotator_id
      AND e.simple_sentence_id = c.simple_sentence_id AND e.complex_sentence_id = c.complex_sentence_id
      AND e.source <> 'adjudication'
    ORDER BY e.id DESC LIMIT 1
) latest ON true
LEFT JOIN LATERAL (
    SELECT a.new_label FROM {event} a
    WHERE latest.source = 'bulk' AND a.project_id = %(project)s AND a.pair_id = c.pair_id AND a.source = 'adjudication'
      AND a.simple_sentence_id = c.simple_sentence_id AND a.complex_sentence_id = c.complex_sentence_id
    ORDER BY a.id DESC LIMIT 1
) checked ON true
"""


@dataclass(frozen=True)
class BulkOffer:
    """What the screen and the project page show: the target, the threshold chosen for it (None: not offered yet),
    and how many answered suggestions the estimate had to go on."""

    target: float
    estimate: PrecisionEstimate | None
    answered: int

    @property
    def threshold(self) -> float | None:
        return self.estimate.threshold if self.estimate else None

    def as_dict(self) -> dict[str, object]:
        return {"target": self.target, "answered": self.answered, "estimate": self.estimate.as_dict() if self.estimate else None}


def project_answers(project: AnnotationProject) -> list[tuple[float, bool]]:
    """(confidence, right) of the suggestions of the project's ``BULK_ESTIMATE_PAIRS`` most recently done assignments,
    each against that annotator's label of it. A suggestion their bulk accept labelled is no evidence, until a
    reviewer decides the sentence pair (a spot check): then it counts, against the reviewer's label.

    Only labels made while the annotator saw these suggestions answer them (``LabelEvent.suggestion_run`` is the run
    whose model made what the screen showed, :mod:`annotation.provenance`; an unlabelled suggestion goes by the
    annotator's last label of the pair, and a pair done without any label of theirs by whether it was done after the
    run finished). After a promoted version's re-alignment became the suggestion run, the pairs done before would
    grade a model that may have been trained on their very labels, and grade it on suggestions nobody saw: an
    estimate on training data. A started pair whose suggestions an adaptation kept (copied from the run they were
    labelled under) still answers them."""
    run = project.suggestion_run
    if run is None:
        return []
    kept = {int(pair): int(origin) for pair, origin in ((run.config or {}).get(KEPT_FROM) or {}).items()}
    sql = _ANSWERS_SQL.format(
        assignment=Assignment._meta.db_table, candidate=CandidateAlignment._meta.db_table, sentence=Sentence._meta.db_table,
        aligned=AlignedPair._meta.db_table, event=LabelEvent._meta.db_table,
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, {"project": project.pk, "run": run.pk, "pairs": BULK_ESTIMATE_PAIRS})
        rows = cursor.fetchall()
    finished = dict(AlignmentRun.objects.filter(pk__in={run.pk, *kept.values()}).values_list("pk", "finished_at")) if rows else {}

    def saw(pair_id: int, shown_run: int | None, labelled: bool, completed_at: datetime) -> bool:
        origin = kept.get(pair_id, run.pk)
        if labelled:
            return shown_run == origin
        return finished.get(origin) is None or completed_at >= finished[origin]  # done without a label: done after the run

    return [
        (min(max(float(confidence or 0.0), 0.0), 1.0), (decided if source == LabelEvent.Source.BULK else label) == suggested)
        for confidence, suggested, label, source, decided, pair_id, shown_run, labelled, completed_at in rows
        if saw(pair_id, shown_run, labelled, completed_at)  # labelled with these suggestions on the screen
        and (source != LabelEvent.Source.BULK or decided)  # a bulk label counts once a reviewer decided its pair
    ]


def _version(project: AnnotationProject) -> tuple:
    """What the offer depends on: pairs done, reviewers' decisions (spot checks of bulk labels), target, run."""
    done = Assignment.objects.filter(project=project, completed_at__isnull=False).aggregate(count=Count("id"), last=Max("completed_at"))
    decided = LabelEvent.objects.filter(project=project, source=LabelEvent.Source.ADJUDICATION).aggregate(last=Max("id"))["last"]
    return (project.pk, project.suggestion_run_id, project.bulk_precision_target, done["count"], str(done["last"]), decided)


def model_answers(project: AnnotationProject) -> list[tuple[float, bool]] | None:
    """The held-out calibration of the model behind the project's suggestion run, as answers; None without one."""
    run = project.suggestion_run
    directory = (run.config or {}).get("model_dir") if run is not None else ""
    calibration = calibration_read(Path(directory)) if directory else None
    return calibration[1] if calibration else None


def bulk_offer(project: AnnotationProject) -> BulkOffer:
    """The project's bulk accept as it stands (kept until another assignment is done; see the module docstring)."""
    key = "bulk-offer:" + hashlib.sha256(repr(_version(project)).encode()).hexdigest()
    cache = caches["figures"]
    offer = cache.get(key)
    if offer is None:
        answers = project_answers(project)
        estimate = offer_threshold(answers, project.bulk_precision_target, model_answers(project))
        offer = BulkOffer(project.bulk_precision_target, estimate, len(answers))
        cache.set(key, offer, CACHE_SECONDS)
    return offer


def bulk_provenance(project: AnnotationProject, threshold: object) -> dict[str, object]:
    """What a bulk edit's labels record: the estimate at the threshold the screen used, as the server computes it now.

    ServiceError (field ``bulk_threshold``) when the threshold is not a number from 0 to 1, the project offers no
    bulk accept yet, or the threshold is below the one the project's target asks for now (the screen's page is older
    than the estimate: a reload shows the current one).
    """
    try:
        value = float(str(threshold))
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # NaN fails both
        raise ServiceError(f"bulk_threshold: {str(threshold)[:20]!r} is not a confidence from 0 to 1", field="bulk_threshold")
    offer = bulk_offer(project)
    if offer.estimate is None:
        raise ServiceError(
            f"bulk_threshold: this project offers no bulk accept yet ({offer.answered} answered suggestions; no threshold "
            f"meets its precision target {offer.target:.2f} on {bulk_estimate.MIN_ANSWERED} answers or more)",
            field="bulk_threshold",
        )
    if value < offer.estimate.threshold:
        raise ServiceError(
            f"bulk_threshold: {value:.2f} is below the project's threshold {offer.estimate.threshold:.2f} now; reload the page",
            field="bulk_threshold",
        )
    if offer.estimate.basis == "model":
        return {"target": offer.target, **estimate_at(model_answers(project) or [], value, basis="model").as_dict()}
    return {"target": offer.target, **estimate_at(project_answers(project), value).as_dict()}


def bulk_target_set(project: AnnotationProject, value: object) -> AnnotationProject:
    """Set the project's precision target for bulk accept; ServiceError naming ``bulk_precision_target`` when it is not
    a number from 0.5 to 0.999."""
    try:
        target = float(str(value).strip())
    except ValueError:
        target = float("nan")
    if not TARGET_MIN <= target <= TARGET_MAX:
        raise ServiceError(
            f"bulk_precision_target: {str(value)[:20]!r} is not a precision from {TARGET_MIN} to {TARGET_MAX}",
            field="bulk_precision_target",
        )
    project.bulk_precision_target = round(target, 3)
    project.save(update_fields=["bulk_precision_target"])
    return project


SPOT_CHECK_PAIRS = 10  # pairs with bulk labels the project page links to, most recent first


def bulk_summary(project: AnnotationProject) -> dict[str, object]:
    """The project page's card: the offer, how many labels bulk accept made (undone ones too) in how many pairs, and
    the pairs most recently bulk accepted, for a reviewer to spot-check (their review shows bulk labels marked)."""
    events = LabelEvent.objects.filter(project=project, source=LabelEvent.Source.BULK)
    totals = events.aggregate(labels=Count("id"), pairs=Count("pair_id", distinct=True))
    recent = (events.values("pair_id", "pair__complex_document__title").annotate(last=Max("id"), labels=Count("id")).order_by("-last"))[
        :SPOT_CHECK_PAIRS
    ]
    return {"offer": bulk_offer(project), "labels": totals["labels"], "pairs": totals["pairs"], "recent": list(recent)}
