"""The shared job base: conditional state changes, what a requeued task does with a "running" row, enqueue on commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import croniter
import pytest
from django.db import transaction
from django.test import override_settings
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.jobs.enqueue import enqueue_on_commit
from alignment.jobs.models import JobStatus, Pickup
from alignment.jobs.wrapper import job_task
from alignment.models import AlignmentRun, EmbeddingRun
from alignment.tasks import stalled_sweep_cron
from annotation.export import service as export
from annotation.export.models import ExportJob
from annotation.training.models import TrainingJob
from tests.annotation.gold_set import build_gold_project
from webapp.webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(corpus) -> EmbeddingRun:
    return EmbeddingRun.objects.create(corpus=corpus, encoder_name="test-encoder")


def test_every_kind_shares_one_status_set_with_the_stored_values() -> None:
    kinds = [EmbeddingRun, AlignmentRun, ExportJob, TrainingJob, WebhookDelivery]
    from alignment.importing.models import ImportJob
    from alignment.mining.models import MiningJob, MiningShard

    for model in [*kinds, MiningJob, MiningShard, ImportJob]:
        assert model._meta.get_field("status").choices == JobStatus.choices, model
        assert {"attempts", "heartbeat_at", "error", "started_at", "finished_at", "created_at"} <= {f.name for f in model._meta.fields}
    assert set(JobStatus.values) == {"queued", "pending", "running", "succeeded", "failed", "cancelled"}
    assert WebhookDelivery._meta.get_field("status").default == "pending"


def test_mark_running_counts_attempts_and_keeps_the_first_start(run) -> None:
    assert run.mark_running()
    first_start = run.started_at
    assert (run.status, run.attempts, run.error) == ("running", 1, "") and run.heartbeat_at is not None
    assert not run.mark_running(), "a running job is not started twice from queued"
    assert run.mark_running(from_statuses=(JobStatus.RUNNING,))
    assert run.attempts == 2 and run.started_at == first_start


def test_a_finished_job_never_changes_state_again(run) -> None:
    run.mark_running()
    assert run.mark_cancelled()
    assert not run.mark_succeeded() and not run.mark_failed("late error") and not run.heartbeat(batches_done=5)
    run.refresh_from_db()
    assert (run.status, run.error, run.batches_done) == ("cancelled", "", 0) and run.finished_at is not None
    assert run.mark_queued() and run.status == "queued" and run.finished_at is None


def test_mark_failed_stores_the_reason_and_heartbeat_stores_progress(run) -> None:
    run.mark_running()
    assert run.heartbeat(batches_done=3)
    assert run.mark_failed("OSError: disk full")
    run.refresh_from_db()
    assert (run.status, run.error, run.batches_done) == ("failed", "OSError: disk full", 3)


@pytest.mark.parametrize(
    ("status", "attempts", "resumable", "expected"),
    [
        ("queued", 0, True, Pickup.FRESH),
        ("running", 1, True, Pickup.RESUME),
        ("running", 1, False, Pickup.RESTART),
        ("running", 3, True, Pickup.GAVE_UP),
        ("succeeded", 1, True, Pickup.SKIP),
        ("cancelled", 0, False, Pickup.SKIP),
    ],
)
def test_pickup_resumes_restarts_or_gives_up_on_a_job_whose_worker_died(run, monkeypatch, status, attempts, resumable, expected) -> None:
    EmbeddingRun.objects.filter(pk=run.pk).update(status=status, attempts=attempts)
    monkeypatch.setattr(EmbeddingRun, "resumable", resumable)
    with override_settings(JOB_MAX_ATTEMPTS=3):
        assert run.pickup() is expected
    run.refresh_from_db()
    if expected is Pickup.GAVE_UP:
        assert run.status == "failed" and run.error == "the worker running this job stopped (attempt 3 of 3)"
    elif expected in (Pickup.FRESH, Pickup.RESUME, Pickup.RESTART):
        assert run.status == "running" and run.attempts == attempts + 1
    else:
        assert (run.status, run.attempts) == (status, attempts)


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_defers_by_name_after_commit_and_stores_the_job_id(corpus) -> None:
    ProcrastinateJob.objects.all().delete()
    with transaction.atomic():
        run = EmbeddingRun.objects.create(corpus=corpus, encoder_name="test-encoder")
        enqueue_on_commit("alignment.embed_corpus", run, run_id=run.pk)
        assert not ProcrastinateJob.objects.exists(), "nothing is queued before the commit"
    job = ProcrastinateJob.objects.get()
    assert (job.task_name, job.queue_name, job.args) == ("alignment.embed_corpus", "embedding", {"run_id": run.pk})
    run.refresh_from_db()
    assert run.procrastinate_job_id == job.id


@pytest.mark.django_db(transaction=True)
def test_enqueue_rolled_back_queues_nothing(corpus) -> None:
    ProcrastinateJob.objects.all().delete()
    with pytest.raises(RuntimeError), transaction.atomic():
        run = EmbeddingRun.objects.create(corpus=corpus, encoder_name="test-encoder")
        enqueue_on_commit("alignment.embed_corpus", run, run_id=run.pk)
        raise RuntimeError
    assert not ProcrastinateJob.objects.exists()


@pytest.mark.django_db(transaction=True)  # the wrapper closes connections as a worker does: no test transaction around it
def test_the_task_wrapper_marks_the_job_failed_with_the_reason(run) -> None:
    @job_task(name="tests.always_fails", queue="tests", model=EmbeddingRun, id_arg="run_id")
    def always_fails(*, run_id: int) -> None:
        EmbeddingRun(pk=run_id).mark_running()
        raise ValueError("the corpus has no sentences")

    with pytest.raises(ValueError, match="no sentences"):
        always_fails(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", "ValueError: the corpus has no sentences")


@pytest.fixture
def export_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # runs in-process below, no worker
    with override_settings(EXPORT_DIR=tmp_path / "exports"):
        yield tmp_path / "exports"


def _dead_attempt(job: ExportJob, export_dir: Path, attempts: int) -> Path:
    """The row and the files a worker killed mid-export leaves: "running", and its staging folder."""
    ExportJob.objects.filter(pk=job.pk).update(status="running", attempts=attempts)
    staging = export_dir / f"project-{job.project_id}" / f".staging-job{job.pk}-0dead000"
    staging.mkdir(parents=True)
    (staging / "half.tsv").write_text("half a file")
    return staging


def test_a_requeued_export_found_running_restarts_from_scratch_and_removes_the_dead_staging(owner, export_dir) -> None:
    project, _ = build_gold_project(owner)
    job = export.export_job_create(project=project, created_by=owner, formats="tsv")
    staging = _dead_attempt(job, export_dir, attempts=1)
    job = export.export_job_execute(job_id=job.pk)
    assert job.status == "succeeded" and job.attempts == 2 and not staging.exists()
    assert not list(export_dir.rglob(".staging-*")) and (job.directory / "README.md").is_file()


def test_a_requeued_export_after_its_last_attempt_fails_with_a_reason_and_no_files(owner, export_dir) -> None:
    project, _ = build_gold_project(owner)
    job = export.export_job_create(project=project, created_by=owner, formats="tsv")
    staging = _dead_attempt(job, export_dir, attempts=3)
    with override_settings(JOB_MAX_ATTEMPTS=3):
        job = export.export_job_execute(job_id=job.pk)
    assert job.status == "failed" and job.error == "the worker running this job stopped (attempt 3 of 3)"
    assert not staging.exists() and not job.directory.exists()


SERVICES = [
    "alignment/services.py", "alignment/aligning/service.py", "alignment/mining/service.py", "alignment/mining/muss_service.py",
    "annotation/training/service.py", "annotation/export/service.py", "webapp/webhooks/services.py", "webapp/webhooks/delivery.py",
]  # fmt: skip


@pytest.mark.parametrize("path", SERVICES)
def test_services_queue_tasks_by_name_and_never_import_a_tasks_module(path) -> None:
    import ast

    from django.conf import settings

    tree = ast.parse((Path(settings.BASE_DIR) / path).read_text())
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if name.split(".")[-1] == "tasks"], "a service imports a tasks module (an import circle)"


def test_the_job_card_shows_attempts_restart_and_the_reason(owner, export_dir) -> None:
    from django.template.loader import render_to_string

    project, _ = build_gold_project(owner)
    job = export.export_job_create(project=project, created_by=owner, formats="tsv")
    ExportJob.objects.filter(pk=job.pk).update(status="failed", attempts=3, error="the worker running this job stopped (attempt 3 of 3)")
    job.refresh_from_db()
    html = render_to_string(
        "jobs/_card.html",
        {"job": job, "project": project, "id_prefix": "export-", "title": "Export", "body": "annotation/export_job_body.html"},
    )
    assert f'id="export-{job.pk}"' in html and "status-failed" in html and "hx-trigger" not in html  # finished: no polling
    assert "export · queued" in html and "attempt 3 (a worker stopped; the job started again)" in html
    assert "the worker running this job stopped (attempt 3 of 3)" in html and "Traceback" not in html


def test_a_delivery_whose_last_attempt_died_fails_with_a_reason_instead_of_sending_again(tram_corpus, owner) -> None:
    from annotation.services import project_create
    from webapp.webhooks.delivery import webhook_delivery_attempt
    from webapp.webhooks.models import Webhook, WebhookAttempt

    project = project_create(name="Hooked", corpus=tram_corpus, created_by=owner, overlap=1)
    webhook = Webhook.objects.create(project=project, url="http://127.0.0.1:9/never-called", events=["label.created"])
    delivery = WebhookDelivery.objects.create(webhook=webhook, event="ping", payload={}, attempts=3, attempt_limit=3)
    outcome = webhook_delivery_attempt(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert outcome.retry_in is None and delivery.status == "failed" and delivery.finished_at is not None
    assert delivery.error == "the worker sending attempt 3 of 3 stopped" and not WebhookAttempt.objects.exists()


@pytest.mark.parametrize(("seconds", "apart"), [(60, 60), (5, 5), (15, 15)])
def test_the_stalled_job_sweep_runs_every_configured_number_of_seconds(seconds, apart) -> None:
    schedule = croniter.croniter(stalled_sweep_cron(seconds), 1_700_000_000)  # a whole minute
    runs = [schedule.get_next(float) for _ in range(4)]
    assert [later - earlier for earlier, later in zip(runs, runs[1:])] == [apart] * 3


def test_a_sweep_interval_that_does_not_divide_a_minute_stops_the_settings_with_the_choices() -> None:
    env = {**os.environ, "STALLED_JOB_SWEEP_SECONDS": "7", "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = subprocess.run([sys.executable, "-c", "import webapp.settings"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "STALLED_JOB_SWEEP_SECONDS=7: choose a divisor of 60" in result.stderr


@pytest.mark.django_db(transaction=True)  # the wrapper closes connections as a worker does: no test transaction around it
def test_a_task_whose_row_was_deleted_while_it_waited_ends_with_one_log_line(run, caplog) -> None:
    from alignment.tasks import align_shard, embed_corpus

    gone = run.pk
    run.delete()  # its corpus deleted in the admin while the task waited in the queue
    with caplog.at_level("WARNING", logger="alignment.jobs.wrapper"):
        assert embed_corpus(run_id=gone) is None
        assert align_shard(shard_id=987654) is None
    assert [record.getMessage() for record in caplog.records] == [
        f"task alignment.embed_corpus({{'run_id': {gone}}}): its embedding run was deleted while it waited; nothing to do",
        "task alignment.align_shard({'shard_id': 987654}): its alignment shard was deleted while it waited; nothing to do",
    ]
    assert all(record.exc_info is None for record in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_a_missing_row_of_another_kind_still_fails_the_job(run) -> None:
    @job_task(name="tests.missing_other_row", queue="tests", model=EmbeddingRun, id_arg="run_id")
    def missing_other_row(*, run_id: int) -> None:
        AlignmentRun.objects.get(pk=987654)

    with pytest.raises(AlignmentRun.DoesNotExist):
        missing_other_row(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("DoesNotExist:")
