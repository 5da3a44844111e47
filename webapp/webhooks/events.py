"""Where events come from: label history rows, finished alignment runs, finished exports.

Receivers are connected in ``webapp.apps.WebappConfig.ready``. They create the
deliveries inside the sender's transaction and queue them on commit, so a label that
is rolled back announces nothing. A broken webhook set-up must never break labelling,
an alignment run or an export: a receiver that fails logs the error (in a savepoint,
so the sender's transaction stays usable) and lets the sender carry on.

Rows written with ``bulk_create`` (label imports) send no ``post_save`` and so no
webhooks: an import of thousands of labels is announced by nothing, on purpose.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable

from django.db import transaction
from django.urls import NoReverseMatch, reverse

from alignment.models import AlignmentRun
from annotation.models import AnnotationProject, LabelEvent
from webapp.webhooks.selectors import event_webhooks
from webapp.webhooks.services import deliveries_create

logger = logging.getLogger(__name__)

LABEL_CREATED = "label.created"
LABEL_CHANGED = "label.changed"
RUN_FINISHED = "run.finished"
EXPORT_READY = "export.ready"


def label_event_data(event: LabelEvent) -> dict:
    return {
        "label_event_id": event.pk,
        "pair_id": event.pair_id,
        "simple_sentence_id": event.simple_sentence_id,
        "complex_sentence_id": event.complex_sentence_id,
        "old_label": event.old_label,
        "new_label": event.new_label,
        "source": event.source,
        "annotator": {"id": event.annotator_id, "username": event.annotator.get_username()},
        "created_at": event.created_at.isoformat(),
    }


def run_data(run: AlignmentRun) -> dict:
    return {
        "run_id": run.pk,
        "corpus_id": run.corpus_id,
        "status": run.status,
        "pairs_done": run.pairs_done,
        "pairs_total": run.pairs_total,
        "error": run.error,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def export_data(job: object) -> dict:
    """``job`` is an ExportJob; only its pk, project_id and files are relied on."""
    data = {"export_id": job.pk, "files": _json_safe(getattr(job, "files", []))}
    url = export_download_path(job)
    if url:
        data["download_url"] = url
    return data


def export_download_path(job: object) -> str:
    """The download page's path when the export app has one (it is built alongside), else ""."""
    for kwargs in ({"project_id": job.project_id, "job_id": job.pk}, {"project_id": job.project_id, "export_id": job.pk}):
        try:
            return reverse("annotation:export_download", kwargs=kwargs)
        except NoReverseMatch:
            continue
    return ""


def _json_safe(value: object) -> object:
    if hasattr(value, "all"):  # a related manager
        value = list(value.all())
    try:
        json.dumps(value)
    except TypeError:
        if isinstance(value, (list, tuple, set)):
            return [item if isinstance(item, (str, int, float, dict)) else str(item) for item in value]
        return str(value)
    return value


def _fan_out(event: str, project_ids: list[int], data_for_project: Callable[[AnnotationProject], dict]) -> None:
    """Deliveries for every subscribed webhook; one query and nothing else when there are none (most label saves)."""
    by_project: dict[int, list] = defaultdict(list)
    for webhook in event_webhooks(event, project_ids=project_ids):
        by_project[webhook.project_id].append(webhook)
    if not by_project:
        return
    try:
        with transaction.atomic():
            for webhooks in by_project.values():
                project = webhooks[0].project
                deliveries_create(webhooks=webhooks, event=event, project=project, data=data_for_project(project))
    except Exception:
        logger.exception("could not create the %s webhook deliveries for projects %s", event, project_ids)


def label_event_saved(sender: type, instance: LabelEvent, created: bool, raw: bool = False, **kwargs) -> None:
    if not created or raw:
        return
    event = LABEL_CHANGED if instance.old_label else LABEL_CREATED
    _fan_out(event, [instance.project_id], lambda project: label_event_data(instance))


def run_finished_received(sender: type, run: AlignmentRun, **kwargs) -> None:
    project_ids = list(AnnotationProject.objects.filter(corpus_id=run.corpus_id).values_list("pk", flat=True))
    if project_ids:
        data = run_data(run)
        _fan_out(RUN_FINISHED, project_ids, lambda project: data)


def export_finished_received(sender: object, job: object, **kwargs) -> None:
    data = export_data(job)
    _fan_out(EXPORT_READY, [job.project_id], lambda project: data)
