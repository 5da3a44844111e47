"""Export jobs: validate options and queue, then stream the project's gold into files in the background.

A job goes queued → running → succeeded | failed. It writes every file into a hidden staging
folder under EXPORT_DIR and renames the folder into place in the transaction that marks the
job succeeded, so a failed job (a write error, nothing to export) leaves no files. The
files, the dataset card and the zip depend only on the project's state and the options:
document pairs by pk, items by sentence index, no clock, fixed Parquet and zip settings.
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
import zipfile
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from alignment.errors import ServiceError
from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import Pickup
from annotation.export import simplification
from annotation.export.card import CardStatistics, render_card
from annotation.export.models import ExportJob, export_root
from annotation.export.selection import (
    ExportDataError,
    candidate_pair_ids,
    pair_exports,
)
from annotation.export.signals import export_finished
from annotation.export.writers import (
    FORMATS,
    CsvWriter,
    JsonlWriter,
    ParquetSplitWriter,
    SimplificationWriter,
    WikiManualWriter,
)
from annotation.models import AnnotationProject
from models_ml.data.splits import DEFAULT_FRACTIONS, SPLITS, assign_splits

EXPORT_TASK = "annotation.export_dataset"
ARCHIVE = "export.zip"
CARD = "README.md"
_WRITERS = {"tsv": WikiManualWriter, "jsonl": JsonlWriter, "csv": CsvWriter, "parquet": ParquetSplitWriter}
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest zip timestamp: fixed, so the archive is reproducible
_PROGRESS_EVERY = 50  # pairs between progress writes


def export_options_clean(
    *, formats: list[str] | str | None = None, include_majority: bool = False, seed: int = 0,
    fractions: dict[str, float] | None = None, drop_identical: bool = False, score_metric: str | None = None,
    score_min: float | None = None, score_max: float | None = None,
) -> dict:  # fmt: skip
    """The options as stored on a job; ValueError names the option that is wrong and why."""
    if formats is None or formats == "" or formats == []:
        formats = list(FORMATS)
    if isinstance(formats, str):
        formats = [part.strip() for part in formats.split(",") if part.strip()]
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        raise ServiceError(f"formats: unknown format(s) {', '.join(map(repr, unknown))}; formats: {', '.join(FORMATS)}", field="formats")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ServiceError(f"seed: must be an integer, got {seed!r}", field="seed")  # callers show ValueErrors as messages
    fractions = dict(DEFAULT_FRACTIONS if fractions is None else fractions)
    if set(fractions) != set(SPLITS):
        raise ServiceError(f"fractions: give exactly {', '.join(SPLITS)}, got {', '.join(sorted(fractions)) or 'none'}", field="fractions")
    try:
        fractions = {split: float(fractions[split]) for split in SPLITS}
    except (TypeError, ValueError):
        raise ServiceError(f"fractions: must be numbers, got {fractions!r}", field="fractions") from None
    if any(value < 0 for value in fractions.values()) or abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise ServiceError(
            "fractions: train / dev / test must be >= 0 and sum to 1, got "
            + " + ".join(f"{fractions[s]:g}" for s in SPLITS)
            + f" = {sum(fractions.values()):g}",
            field="fractions",
        )
    score_metric = score_metric or None
    if score_metric is None:
        if score_min is not None or score_max is not None:
            raise ServiceError("score_metric: choose bleu or gleu to filter by a score range", field="score_metric")
    else:
        if score_metric not in simplification.METRICS:
            raise ServiceError(
                f"score_metric: unknown metric {score_metric!r}; metrics: {', '.join(simplification.METRICS)}", field="score_metric"
            )
        score_min = 0.0 if score_min is None else float(score_min)
        score_max = 100.0 if score_max is None else float(score_max)
        for name, value in (("score_min", score_min), ("score_max", score_max)):
            if not 0.0 <= value <= 100.0:
                raise ServiceError(f"{name}: {score_metric.upper()} scores run from 0 to 100, got {value:g}", field=name)
        if score_min > score_max:
            raise ServiceError(f"score_min: {score_min:g} is above score_max {score_max:g}", field="score_min")
    return {
        "formats": [name for name in FORMATS if name in formats], "include_majority": bool(include_majority), "seed": seed,
        "fractions": fractions, "drop_identical": bool(drop_identical), "score_metric": score_metric,
        "score_min": score_min if score_metric else None, "score_max": score_max if score_metric else None,
    }  # fmt: skip


def _nothing_to_export(project: AnnotationProject, include_majority: bool) -> ExportDataError:
    what = "verified document pairs, adjudicated items, imported gold" + (" or labels" if include_majority else "")
    hint = "" if include_majority else " (or include the unadjudicated majority)"
    return ExportDataError(
        f"project {project.name!r} has nothing to export: no {what}. Verify document pairs on the review page first{hint}."
    )


def export_job_create(*, project: AnnotationProject, created_by: AbstractBaseUser | None, enqueue: bool = True, **options) -> ExportJob:
    """Validate the options, check there is gold to export and queue a job; ValueError / ExportDataError say what is wrong."""
    cleaned = export_options_clean(**options)
    if not candidate_pair_ids(project, include_majority=cleaned["include_majority"]):
        raise _nothing_to_export(project, cleaned["include_majority"])
    with transaction.atomic():
        job = ExportJob.objects.create(project=project, created_by=created_by, options=cleaned)
        if enqueue:
            enqueue_on_commit(EXPORT_TASK, job, job_id=job.pk)
    return job


def level_numbers(project: AnnotationProject) -> dict[str, int]:
    """Each level of the corpus as the number in Wiki-Manual ids: the level itself when it is a number, else its
    position in the corpus's level order (most complex first), then the remaining levels alphabetically; named
    levels are numbered after the numeric ones, so two levels never share a number."""
    levels = sorted(set(project.corpus.documents.values_list("level", flat=True)))
    numbers = {level: int(level) for level in levels if level.isdigit()}
    order = [level for level in project.corpus.level_order or [] if level in levels and level not in numbers]
    rest = [level for level in levels if level not in numbers and level not in order]
    start = max(numbers.values(), default=-1) + 1  # named levels never take a number a numeric level has
    numbers.update({level: start + rank for rank, level in enumerate([*order, *rest])})
    return numbers


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _listing(root: Path, names: list[str]) -> list[dict]:
    return [{"name": name, "bytes": (root / name).stat().st_size, "sha256": _sha256(root / name)} for name in names]


def _zip(root: Path, names: list[str]) -> None:
    with zipfile.ZipFile(root / ARCHIVE, "w") as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            with (root / name).open("rb") as source, archive.open(info, "w") as target:
                shutil.copyfileobj(source, target, 1 << 20)


def export_write(*, project: AnnotationProject, options: dict, root: Path, job_id: int | None = None) -> list[dict]:
    """Stream the project's gold into ``root`` (which must exist and be empty); returns the file listing.

    ExportDataError when no item qualifies. ``job_id`` only routes progress to the job's row.
    """
    pair_ids = candidate_pair_ids(project, include_majority=options["include_majority"])
    if job_id is not None:
        ExportJob.objects.filter(pk=job_id).update(pairs_total=len(pair_ids))
    splits = assign_splits(pair_ids, seed=options["seed"], fractions=options["fractions"])
    numbers = level_numbers(project)
    level_number = numbers.__getitem__
    writers = [_WRITERS[name](root, level_number) for name in options["formats"] if name in _WRITERS]
    simplification_writer = SimplificationWriter(root, level_number) if "simplification" in options["formats"] else None
    statistics = CardStatistics()
    try:
        for done, (pair_id, exported) in enumerate(pair_exports(project, pair_ids, include_majority=options["include_majority"]), 1):
            if exported is not None:
                split = splits[pair_id]
                for writer in writers:
                    writer.write_pair(exported, split)
                groups = simplification.pair_groups(exported)
                pairs = simplification.simplification_pairs(exported, groups)
                kept = [pair for pair in pairs if simplification.keep(pair, options)]
                if simplification_writer is not None:
                    simplification_writer.write_groups(exported, split, kept)
                statistics.simplification_total += len(pairs)
                statistics.simplification_kept += len(kept)
                statistics.add(exported, split, simplification.phenomena_counts(exported, groups, pairs))
            if job_id is not None and (done % _PROGRESS_EVERY == 0 or done == len(pair_ids)):
                _still_running(ExportJob(pk=job_id).heartbeat(pairs_done=done, items_written=statistics.items))
        statistics.finish()
    finally:
        statistics.close()
        for writer in [*writers, simplification_writer]:
            if writer is not None:
                writer.close()
    if not statistics.items:
        raise _nothing_to_export(project, options["include_majority"])
    if job_id is not None:  # the job's page says which splits came out empty
        ExportJob.objects.filter(pk=job_id).update(split_pairs={split: statistics.pairs[split] for split in SPLITS})
    names = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    files = _listing(root, names)
    (root / CARD).write_text(
        render_card(project=project, statistics=statistics, options=options, level_numbers=numbers, files=files), encoding="utf-8"
    )
    names = [CARD, *names]
    if job_id is not None:  # the archive takes as long again as the files: not for a job cancelled meanwhile
        _still_running(ExportJob(pk=job_id).heartbeat())
    _zip(root, names)
    return _listing(root, [*names, ARCHIVE])


class ExportCancelled(Exception):
    """The job was cancelled while it wrote its files (:func:`export_job_cancel`)."""


def _still_running(alive: bool) -> None:
    if not alive:
        raise ExportCancelled


def export_job_cancel(*, job: ExportJob) -> ExportJob:
    """Cancel a queued or running export: one running stops within its next 50 pairs (or before its archive) and
    removes what it wrote, since half an export is no dataset. A finished job is left as it is."""
    job.mark_cancelled()
    job.refresh_from_db()
    return job


def _staging_folders(job: ExportJob) -> list[Path]:
    """Staging folders of the job's attempts (a killed worker leaves its own behind)."""
    parent = export_root() / f"project-{job.project_id}"
    return sorted(parent.glob(f".staging-job{job.pk}-*")) if parent.is_dir() else []


def export_job_execute(*, job_id: int) -> ExportJob:
    """Run a queued job to the end; any error marks it failed, removes its files and is re-raised.

    Found "running" (its worker died) it cannot resume its half-written files: it removes the dead
    attempt's staging folder and starts again, or after JOB_MAX_ATTEMPTS fails and removes it (Job.pickup).
    """
    job = ExportJob.objects.select_related("project__corpus", "project__suggestion_run").get(pk=job_id)
    pickup = job.pickup()
    if pickup in (Pickup.RESTART, Pickup.GAVE_UP):
        for folder in _staging_folders(job):
            shutil.rmtree(folder, ignore_errors=True)
    if pickup not in (Pickup.FRESH, Pickup.RESTART):
        return job
    parent = export_root() / f"project-{job.project_id}"
    staging: Path | None = parent / f".staging-job{job.pk}-{uuid.uuid4().hex[:8]}"
    try:
        staging.mkdir(parents=True)
        job.heartbeat(pairs_done=0, items_written=0)
        files = export_write(project=job.project, options=job.options, root=staging, job_id=job.pk)
        with transaction.atomic():
            if not job.mark_succeeded(files=files):
                job.refresh_from_db(fields=["status"])
                _still_running(job.status != ExportJob.Status.CANCELLED)
                raise RuntimeError(f"export job {job_id} stopped running before it finished (status {job.status})")
            final = job.directory
            if final.exists():  # left by a run whose transaction rolled back after the rename
                shutil.rmtree(final)
            staging.rename(final)  # last: if it fails, the transaction rolls back and the staging folder is removed
        staging = None
    except ExportCancelled:  # its files go with the staging folder (below); the row says cancelled already
        return ExportJob.objects.get(pk=job_id)
    except Exception as exc:
        job.mark_failed_by(exc)
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    job = ExportJob.objects.select_related("project").get(pk=job_id)
    export_finished.send(sender=ExportJob, job=job)
    return job
