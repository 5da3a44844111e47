"""Every job kind survives a worker killed mid-job: resumed with nothing duplicated, or restarted/failed and cleaned up.

A real ``manage.py procrastinate worker`` runs the job with JOB_TEST_STEP_DELAY_MS (it sleeps after
each heartbeat, so the job is still mid-way when we look), is SIGKILLed once the row shows progress,
the stalled-job sweep requeues its Procrastinate job, and a second worker finishes it.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from procrastinate.contrib.django import app

from alignment import services
from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create
from alignment.importing.jobs import import_job_create
from alignment.importing.models import ImportJob, ImportJobFile
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.jobs.stalled import stalled_jobs_retry_async
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningJob, MiningSequence, MiningShard
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, Document, EmbeddingRun, SentenceEmbedding
from alignment.services import corpus_get_or_create
from annotation.export import service as export
from annotation.export.models import ExportJob
from annotation.models import AnnotationProject
from annotation.training import adaptation
from annotation.training import service as training
from annotation.training.models import AdaptationJob, ModelActivation, ModelVersion, TrainingJob
from tests.alignment.conftest import LEXICAL, STORIES, TFIDF_CONFIG, big_corpus, python_executable, run_worker, worker_subprocess_env  # noqa: F401 - pytest fixtures used as arguments
from tests.alignment.test_mining import PARAPHRASES
from tests.annotation.gold_set import build_gold_project
from webapp.webhooks import services as webhooks
from webapp.webhooks.models import WebhookAttempt, WebhookDelivery

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the HTTP receiver and the labelled project
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # a real worker per case

STEP_DELAY_MS = 1500  # the killed worker's pause after each heartbeat: long enough to kill it mid-job


@pytest.fixture
def state(tmp_path: Path, settings) -> Path:
    """Model and export folders shared by the test and its worker processes."""
    settings.MODEL_DIR, settings.EXPORT_DIR = tmp_path / "models", tmp_path / "exports"
    return tmp_path


@pytest.fixture
def killed_worker(worker_subprocess_env, python_executable, state, run_worker):
    """Start a real worker, SIGKILL it once ``mid_job()`` is true, requeue the stalled job, run a second worker.

    The worker runs without time slices (``JOB_SLICE_SECONDS=0``): the kill is meant for a job in flight. A slice
    counts from the job's start, model loading included, so on a loaded machine an embedding job had given its worker
    back after its first batch, and the kill then hit the stalled-job sweep instead (slices: test_fair_share.py)."""

    def run(mid_job: Callable[[], bool], *, second_worker: Callable[[], None] | None = None, **env: str) -> None:
        env = {
            **worker_subprocess_env, "JOB_TEST_STEP_DELAY_MS": str(STEP_DELAY_MS), "MODEL_DIR": str(state / "models"),
            "EXPORT_DIR": str(state / "exports"), "JOB_SLICE_SECONDS": "0", **env,
        }  # fmt: skip
        worker = subprocess.Popen([python_executable, "manage.py", "procrastinate", "worker"], env=env, cwd=settings.BASE_DIR)
        try:
            deadline = time.monotonic() + 240
            while not mid_job():
                assert worker.poll() is None, "the worker exited before it was killed"
                assert time.monotonic() < deadline, "the job never got going"
                time.sleep(0.05)
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
        finally:
            if worker.poll() is None:
                worker.kill()
        # its own thread and loop: after the browser tests, pytest-playwright keeps an event loop running here
        with ThreadPoolExecutor(max_workers=1) as pool:
            assert pool.submit(asyncio.run, _retry_stalled()).result() >= 1, "the sweep requeued nothing"
        (second_worker or run_worker)()

    return run


async def _retry_stalled() -> int:
    worker_app = app.with_connector(app.connector.get_worker_connector())
    async with worker_app.open_async():
        return await stalled_jobs_retry_async(worker_app, seconds_since_heartbeat=0)


def _running(model, **filters) -> bool:
    return model.objects.filter(status="running", heartbeat_at__isnull=False, **filters).exists()


def _staging(root: Path) -> list[Path]:
    return list(root.rglob(".staging-*")) if root.exists() else []


# --- one case per job kind ----------------------------------------------------------------------------------------


def embedding(request, killed_worker) -> None:
    corpus = request.getfixturevalue("big_corpus")(96)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    killed_worker(lambda: EmbeddingRun.objects.get(pk=run.pk).batches_done >= 1, EMBEDDING_BATCH_SIZE="16")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 2 and 16 <= run.already_embedded < 96  # resumed after the stored batches
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == run.embedded_sentences == 96


def alignment(request, killed_worker) -> None:
    corpus, _ = corpus_get_or_create(name="Stories", language="en", owner=request.getfixturevalue("owner"))
    files = [(f"{name}-{level}.txt", text.encode()) for name, texts in STORIES.items() for level, text in zip(("adv", "ele"), texts)]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    run = alignment_run_create(corpus=corpus, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    killed_worker(lambda: AlignmentRun.objects.get(pk=run.pk).pairs_done >= 1)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 2 and run.pairs_done == run.pairs_total == AlignedPair.objects.filter(run=run).count() == 3
    assert CandidateAlignment.objects.filter(run=run).count() == run.candidates_written == sum(run.label_counts.values())


def _muss_job(owner, name: str) -> MiningJob:
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in PARAPHRASES.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 4, "encode_batch": 2}, shard_sequences=2)
    return job


def _assert_mined_once(job: MiningJob) -> None:
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    indices = list(MiningSequence.objects.filter(job=job).order_by("index").values_list("index", flat=True))
    assert indices == list(range(job.documents_total // 2)), "a sequence was stored twice or skipped"
    assert job.documents_done == job.documents_total and job.shards_done == job.shards_total  # no batch counted twice
    assert not MiningShard.objects.filter(job=job).exclude(status="succeeded").exists()
    found = {(p.source_text, p.target_text) for p in MinedPair.objects.filter(job=job)}
    assert job.pairs_found == len(found) == MinedPair.objects.filter(job=job).count()
    assert ("The committee approved the annual budget on Monday.", "On Monday the annual budget was approved by the committee.") in found


def mining_prepare(request, killed_worker) -> None:
    job = _muss_job(request.getfixturevalue("owner"), "Prepare killed")
    killed_worker(lambda: _running(MiningJob, pk=job.pk) and MiningSequence.objects.filter(job=job).exists())
    _assert_mined_once(job)
    assert job.attempts == 2  # the prepare step ran twice, resuming after the stored sequences


def mining_shard(request, killed_worker) -> None:
    job = _muss_job(request.getfixturevalue("owner"), "Shard killed")
    killed_worker(lambda: _running(MiningShard, job=job))
    _assert_mined_once(job)
    assert MiningShard.objects.filter(job=job, attempts=2).count() == 1  # the killed shard resumed, the others ran once


def _gold_project(request):
    project, _ = build_gold_project(request.getfixturevalue("owner"))
    return project


def training_restart(request, killed_worker) -> None:
    project = _gold_project(request)
    job = training.training_job_create(project=project, created_by=None, epochs=4, patience=4, base="untrained")
    root = Path(settings.MODEL_DIR) / f"project-{project.pk}"

    def second_worker() -> None:  # the dead attempt's staging folder, as a kill while saving leaves it
        (root / f".staging-job{job.pk}-dead0000").mkdir(parents=True)
        (root / f".staging-job{job.pk}-dead0000" / "crf.pt").write_bytes(b"half")
        request.getfixturevalue("run_worker")()

    killed_worker(lambda: "epoch" in TrainingJob.objects.get(pk=job.pk).stage, second_worker=second_worker)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.attempts == 2 and ModelVersion.objects.filter(project=project).count() == 1 and job.version.number == 1
    epochs = [entry["epoch"] for entry in job.progress if entry.get("model", "CRF") == "CRF"]
    assert epochs == list(range(len(epochs))), "progress of the dead attempt was kept"  # 0: the starting weights, then 1, 2, ...
    assert not _staging(root) and Path(job.version.path).is_dir()


def adaptation_restart(request, killed_worker) -> None:
    project = _gold_project(request)
    weak = training.training_job_create(project=project, created_by=None, epochs=1, lr=0.001, base="untrained")
    weak = training.training_job_execute(job_id=weak.pk, build_measure=run_measure, device="cpu").version
    AnnotationProject.objects.filter(pk=project.pk).update(active_model=weak)
    request.getfixturevalue("settings").AUTO_ADAPT_EPOCHS = 1  # the second worker runs in this process
    job = adaptation.adaptation_queue(project=project, pair=project.pairs.first(), by=None)
    root = Path(settings.MODEL_DIR) / f"project-{project.pk}"
    killed_worker(lambda: _running(AdaptationJob, pk=job.pk, stage__startswith="adapting"), AUTO_ADAPT_EPOCHS="1")
    job.refresh_from_db()
    assert job.status == "succeeded" and job.outcome == AdaptationJob.Outcome.ADAPTED, (job.error, job.reason)
    assert job.attempts == 2 and list(ModelVersion.objects.filter(project=project, automatic=True)) == [job.version]
    assert ModelActivation.objects.filter(project=project).count() == 1 and not _staging(root) and Path(job.version.path).is_dir()


def export_restart(request, killed_worker) -> None:
    project = _gold_project(request)
    job = export.export_job_create(project=project, created_by=None, formats="tsv")
    root = Path(settings.EXPORT_DIR)
    killed_worker(lambda: _running(ExportJob, pk=job.pk) and bool(_staging(root)))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.attempts == 2 and not _staging(root)
    written = sorted(str(path.relative_to(job.directory)) for path in job.directory.rglob("*") if path.is_file())
    assert written == sorted(entry["name"] for entry in job.files)  # one complete set of files, nothing from the dead attempt


def export_gave_up(request, killed_worker) -> None:
    project = _gold_project(request)
    job = export.export_job_create(project=project, created_by=None, formats="tsv")
    root = Path(settings.EXPORT_DIR)

    def second_worker() -> None:
        request.getfixturevalue("settings").JOB_MAX_ATTEMPTS = 1
        request.getfixturevalue("run_worker")()

    killed_worker(lambda: _running(ExportJob, pk=job.pk) and bool(_staging(root)), second_worker=second_worker)
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "the worker running this job stopped (attempt 1 of 1)"
    assert job.finished_at is not None and not _staging(root) and not job.directory.exists()


def import_files(request, killed_worker) -> None:
    owner = request.getfixturevalue("owner")
    files = [(f"{name}-{level}.txt", text.encode()) for name, texts in STORIES.items() for level, text in zip(("adv", "ele"), texts)]
    job = import_job_create(
        user=owner, corpus_name="Imported", language="en", pairing="all", options=ImportOptions(format="presplit"), files=files
    )
    killed_worker(lambda: _running(ImportJob, pk=job.pk) and len(ImportJob.objects.get(pk=job.pk).results) >= 1)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.attempts == 2 and job.corpus_created and job.corpus.name == "Imported"
    assert [result["file"] for result in job.results] == [name for name, _ in files]  # each file reported once, in order
    report = job.report
    assert report.documents_created + report.documents_unchanged == len(files) == Document.objects.filter(corpus=job.corpus).count()
    assert report.pairs_created == job.corpus.pairs.count() == len(STORIES)
    assert not ImportJobFile.objects.filter(job=job).exists()
    assert EmbeddingRun.objects.filter(corpus=job.corpus).count() == 1 and job.embedding_run is not None
    assert AlignmentRun.objects.filter(corpus=job.corpus).count() == 1


def webhook_delivery(request, killed_worker) -> None:
    receiver = request.getfixturevalue("receiver_factory")(200, delay=60)  # the first POST hangs until the kill
    labelled = request.getfixturevalue("labelled_project")
    hook = webhooks.webhook_create(project=labelled.project, url=receiver.url, events=["label.created"], created_by=None)
    delivery = webhooks.webhook_ping(webhook=hook, by=None)

    def second_worker() -> None:
        receiver.delay = 0
        request.getfixturevalue("run_worker")()

    killed_worker(lambda: len(receiver.requests) >= 1, second_worker=second_worker, WEBHOOK_ALLOWED_HOSTS="127.0.0.1")
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 2 and delivery.finished_at is not None
    assert list(WebhookAttempt.objects.filter(delivery=delivery).values_list("number", "status_code")) == [(2, 200)]
    ids = {{name.lower(): value for name, value in r.headers.items()}["x-webhook-delivery"] for r in receiver.requests}
    assert len(receiver.requests) == 2 and len(ids) == 1, "a retry must reuse the delivery id, so receivers drop the duplicate"
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 1


CASES = {
    "embedding": embedding,
    "alignment": alignment,
    "mining_prepare": mining_prepare,
    "mining_shard": mining_shard,
    "training_restart": training_restart,
    "adaptation_restart": adaptation_restart,
    "export_restart": export_restart,
    "export_gave_up": export_gave_up,
    "webhook_delivery": webhook_delivery,
    "import": import_files,
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_job_whose_worker_is_killed_mid_job_never_stays_running(kind, request, killed_worker, settings) -> None:
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    CASES[kind](request, killed_worker)
