"""The team deployment, for real: one PostgreSQL server, two web processes, two workers, a backup.

Everything runs as separate OS processes talking to a separate PostgreSQL server over
TCP with a password (``DATABASE_URL``), as on several machines. One worker is
SIGKILLed in the middle of an embedding job; the other must finish the work with
nothing lost or stored twice. Then the database is dumped with ``pg_dump -Fc``,
restored into a new database, and the app reads the copy.

This is one of the suite's slow integration tests (two to three minutes on a busy 2-core machine, most of it
process start-up): ``-m deployment`` runs it with the database restart test, ``-m "not slow"`` leaves it out.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from tests.alignment.conftest import synthetic_sentences
from tests.markers import PROCESS_LEVEL
from tests.webapp.pg_server import PostgresServer, free_port, postgres_server_start

pytestmark = [pytest.mark.deployment, *PROCESS_LEVEL]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO_ROOT / "alignment" / "demo_corpus"
BIN = Path(sys.executable).parent
SMALL_CORPORA = ["Team A", "Team B", "Team C", "Team D"]
BIG_CORPUS = "Team big"
BIG_SENTENCES = 80  # per document of its four pairs: 40 batches of 16 at 400 ms a batch, so the kill lands mid-job
BIG_TOTAL = 4 * 2 * BIG_SENTENCES
DEPLOY = (
    "import os; from django.core.management import call_command; from django.contrib.auth import get_user_model\n"
    "call_command('migrate', interactive=False, verbosity=0); call_command('collectstatic', interactive=False, verbosity=0)\n"
    "get_user_model().objects.create_superuser('lead', 'lead@example.org', 'lead-pass-123')"
)
TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"


class Deployment:
    """The processes of one deployment, their logs, and the way to talk to them."""

    def __init__(self, root: Path, server: PostgresServer) -> None:
        self.root = root
        self.server = server
        self.processes: dict[str, subprocess.Popen] = {}
        self.killed: set[str] = set()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO_ROOT),
            "DATABASE_URL": server.url("aligner"),
            "STATE_DIR": str(root / "state"),  # shared by all processes: MODEL_DIR and EXPORT_DIR live here
            "SECRET_KEY": "team-deployment-test-key",
            "DEBUG": "0",
            "EMBEDDING_BATCH_SIZE": "16",  # many small committed batches: a kill lands mid-job
            "JOB_TEST_STEP_DELAY_MS": "400",  # and each lasts long enough for the test to see it in flight
            "JOB_SLICE_SECONDS": "0",  # and it stays on its worker: a slice counts the encoder's loading, long on a busy machine
            "STALLED_JOB_SECONDS": "12",  # workers beat every 10 s
            "STALLED_JOB_SWEEP_SECONDS": "5",  # the sweep that requeues the killed worker's job: every 5 s, not every minute
            "LOG_LEVEL": "WARNING",
        }

    def manage(self, *args: str, database: str = "aligner") -> str:
        env = {**self.env, "DATABASE_URL": self.server.url(database)}
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")  # noqa: SIM115 - the server writes to it for its whole life; closed when the test process ends
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.read_text()[-3000:]}" for p in sorted(self.root.glob("*.log")))

    def sql(self, query: str, *params) -> list[tuple]:
        with self.server.connect("aligner") as connection:
            return connection.execute(query, params).fetchall()

    def wait_for(self, what: str, condition: Callable[[], bool], timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            dead = [name for name, p in self.processes.items() if p.poll() is not None and name not in self.killed]
            assert not dead, f"{dead} exited while waiting for {what}\n{self.logs()}"
            assert time.monotonic() < deadline, f"gave up waiting for {what}\n{self.logs()}"
            time.sleep(0.5)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    root = Path(tempfile.mkdtemp(prefix="team-deployment-"))
    server = None
    deployed = None
    try:
        server = postgres_server_start(root)
        deployed = Deployment(root, server)
        yield deployed
    finally:
        if deployed is not None:
            deployed.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _write_corpus_files(folder: Path, *, articles: int, sentences: int) -> None:
    """``articles`` two-level articles of ``sentences`` generated sentences each (paragraphs of ten)."""
    folder.mkdir(parents=True)
    lines = synthetic_sentences(articles * sentences * 2)
    for article in range(articles):
        for level_index, level in enumerate(["adv", "ele"]):
            start = (2 * article + level_index) * sentences
            chunk = lines[start : start + sentences]
            text = "\n\n".join("\n".join(chunk[i : i + 10]) for i in range(0, sentences, 10))
            (folder / f"Article{article}-{level}.txt").write_text(text)


def _import_and_queue_embeddings(deployed: Deployment, folder: Path, names: list[str]) -> None:
    """``import_corpus`` for each corpus (in one process: start-up is most of an import), then queue their embedding together."""
    code = (
        "from django.conf import settings; from django.core.management import call_command\n"
        "from alignment.models import Corpus; from alignment.services import embedding_run_create\n"
        f"for name in {names!r}: call_command('import_corpus', {str(folder)!r}, corpus=name, owner='lead', no_embed=True, "
        "no_align=True, verbosity=0)\n"
        f"for name in {names!r}: embedding_run_create(corpus=Corpus.objects.get(name=name), encoder_name=settings.ENCODER_MODEL)"
    )
    deployed.manage("shell", "-c", code)


def _start_alignment_runs(deployed: Deployment, web_urls: list[str], token: str, names: list[str]) -> list[int]:
    """One run per corpus through the API, alternating between the web processes."""
    run_ids = []
    for index, name in enumerate(names):
        corpus_id = deployed.sql("SELECT id FROM alignment_corpus WHERE name = %s", name)[0][0]
        response = requests.post(
            f"{web_urls[index % 2]}/api/alignment-runs/", headers={"Authorization": f"Token {token}"},
            json={"corpus": corpus_id, "measure": "tfidf_cosine", "also_score": ["jaccard"]}, timeout=30,
        )  # fmt: skip
        assert response.status_code == 201, response.text
        run_ids.append(response.json()["id"])
    return run_ids


def _all_done(deployed: Deployment) -> bool:
    busy = deployed.sql("SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing') AND queue_name <> 'maintenance'")
    return busy[0][0] == 0


def test_two_web_and_two_worker_processes_share_one_database_and_survive_a_killed_worker(deployment: Deployment) -> None:
    """Long because it is one user story end to end; split into steps, each would only hand the same state on."""
    deployed = deployment
    # What a deploy runs, in one process (each Django start costs seconds): migrate, collectstatic (the web processes
    # serve hashed names), a superuser.
    deployed.manage("shell", "-c", DEPLOY)

    web_urls = []
    for index in (1, 2):
        port = free_port()
        deployed.start(
            f"web-{index}", [str(BIN / "gunicorn"), "webapp.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "1", "--no-control-socket"]
        )
        web_urls.append(f"http://127.0.0.1:{port}")
    # Workers start one after the other, so procrastinate_workers ids say which process is which.
    worker_ids = []
    for index in (1, 2):
        deployed.start(f"worker-{index}", [sys.executable, "manage.py", "procrastinate", "worker"])
        deployed.wait_for(
            f"worker {index} to register", lambda index=index: len(deployed.sql("SELECT id FROM procrastinate_workers")) == index
        )
        worker_ids.append(max(row[0] for row in deployed.sql("SELECT id FROM procrastinate_workers")))

    def web_ready() -> bool:
        try:
            return all(requests.get(f"{url}/accounts/login/", timeout=30).status_code == 200 for url in web_urls)
        except requests.RequestException:  # not listening yet, or still loading the app
            return False

    deployed.wait_for("both web processes", web_ready)
    token = requests.post(f"{web_urls[0]}/api/auth/token/", json={"username": "lead", "password": "lead-pass-123"}, timeout=10)
    assert token.status_code == 200, token.text
    token = token.json()["token"]

    # Four small corpora: eight jobs (embedding + alignment) spread over the two workers.
    _import_and_queue_embeddings(deployed, DEMO_CORPUS, SMALL_CORPORA)
    small_runs = _start_alignment_runs(deployed, web_urls, token, SMALL_CORPORA)
    deployed.wait_for("the small corpora's jobs", lambda: _all_done(deployed))
    takers = deployed.sql("SELECT DISTINCT worker_id FROM procrastinate_jobs WHERE status = 'succeeded' AND queue_name <> 'maintenance'")
    assert {row[0] for row in takers} == set(worker_ids), "both workers should have taken jobs"
    # The API of either web process sees the runs the other started.
    for url in web_urls:
        listing = requests.get(f"{url}/api/alignment-runs/", headers={"Authorization": f"Token {token}"}, timeout=10).json()
        assert {run["id"] for run in listing["results"]} >= set(small_runs)

    # A big corpus; the worker embedding it is killed once some batches are stored.
    _write_corpus_files(deployed.root / "big", articles=4, sentences=BIG_SENTENCES)
    _import_and_queue_embeddings(deployed, deployed.root / "big", [BIG_CORPUS])
    big_alignment = _start_alignment_runs(deployed, web_urls[::-1], token, [BIG_CORPUS])[0]
    embedding_job = (
        "SELECT job.worker_id, run.embedded_sentences, run.total_sentences FROM procrastinate_jobs job "
        "JOIN alignment_embeddingrun run ON run.procrastinate_job_id = job.id JOIN alignment_corpus c ON c.id = run.corpus_id "
        "WHERE c.name = %s AND job.status = 'doing'"
    )

    def embedding_in_flight() -> bool:
        rows = deployed.sql(embedding_job, BIG_CORPUS)
        return bool(rows) and 0 < rows[0][1] < rows[0][2]

    deployed.wait_for("the big embedding job to have stored some batches", embedding_in_flight)
    victim_id = deployed.sql(embedding_job, BIG_CORPUS)[0][0]
    victim = f"worker-{worker_ids.index(victim_id) + 1}"
    deployed.killed.add(victim)
    deployed.processes[victim].send_signal(signal.SIGKILL)
    deployed.processes[victim].wait()
    survivor_id = next(worker for worker in worker_ids if worker != victim_id)

    deployed.wait_for("the survivor to requeue and finish the killed job", lambda: _all_done(deployed))
    sentences, embeddings, distinct = deployed.sql(
        "SELECT (SELECT count(*) FROM alignment_sentence s JOIN alignment_document d ON d.id = s.document_id "
        "        JOIN alignment_corpus c ON c.id = d.corpus_id WHERE c.name = %s), count(*), count(DISTINCT (e.sentence_id, e.encoder_id)) "
        "FROM alignment_sentenceembedding e JOIN alignment_sentence s ON s.id = e.sentence_id "
        "JOIN alignment_document d ON d.id = s.document_id JOIN alignment_corpus c ON c.id = d.corpus_id WHERE c.name = %s",
        BIG_CORPUS, BIG_CORPUS,
    )[0]  # fmt: skip
    assert sentences == BIG_TOTAL and embeddings == sentences and distinct == sentences
    status, attempts = deployed.sql(
        "SELECT run.status, run.attempts FROM alignment_embeddingrun run JOIN alignment_corpus c ON c.id = run.corpus_id WHERE c.name = %s",
        BIG_CORPUS,
    )[0]  # fmt: skip
    assert (status, attempts) == ("succeeded", 2), "the killed job was requeued once and finished"
    finisher = deployed.sql(
        "SELECT job.worker_id FROM procrastinate_jobs job JOIN alignment_embeddingrun run ON run.procrastinate_job_id = job.id "
        "JOIN alignment_corpus c ON c.id = run.corpus_id WHERE c.name = %s", BIG_CORPUS,
    )[0][0]  # fmt: skip
    assert finisher == survivor_id

    for run_id in [*small_runs, big_alignment]:
        run_status, pairs_total, aligned, candidates, distinct_candidates = deployed.sql(
            "SELECT r.status, r.pairs_total, (SELECT count(*) FROM alignment_alignedpair a WHERE a.run_id = r.id), "
            "(SELECT count(*) FROM alignment_candidatealignment c WHERE c.run_id = r.id), "
            "(SELECT count(DISTINCT (c.simple_sentence_id, c.complex_sentence_id)) FROM alignment_candidatealignment c WHERE c.run_id = r.id) "
            "FROM alignment_alignmentrun r WHERE r.id = %s", run_id,
        )[0]  # fmt: skip
        assert run_status == "succeeded" and aligned == pairs_total > 0
        assert candidates == distinct_candidates > 0

    _backup_restore_and_read(deployed)


def _backup_restore_and_read(deployed: Deployment) -> None:
    """pg_dump -Fc, pg_restore into a new database; migrate is a no-op and the app reads the copy.

    The web and worker processes are stopped first, as for a backup that is checked: the copy is compared row for row
    with a database nothing writes to any more (a worker's periodic sweep queues a job every few seconds, so a live
    database had gained a Procrastinate job by the time it was counted)."""
    deployed.stop()
    dump = deployed.root / "aligner.dump"
    deployed.server.dump("aligner", dump)
    deployed.server.restore(dump, "aligner_restored")
    counts = {}
    for database in ("aligner", "aligner_restored"):
        with deployed.server.connect(database) as connection:
            tables = [row[0] for row in connection.execute(TABLES).fetchall()]
            counts[database] = {table: connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables}
    assert counts["aligner_restored"] == counts["aligner"]  # every table, row for row
    assert counts["aligner"]["alignment_sentenceembedding"] == BIG_TOTAL + 4 * 215

    # On the copy, in one process: migrate has nothing to do, the checks pass, and the app reads corpora and vectors.
    code = (
        "import io, json; from django.core.management import call_command\n"
        "from alignment.models import Corpus, SentenceEmbedding; from alignment.selectors import sentence_nearest\n"
        "migrated = io.StringIO(); call_command('migrate', interactive=False, stdout=migrated)\n"
        "call_command('check', databases=['default'])\n"
        "embedding = SentenceEmbedding.objects.select_related('encoder').first()\n"
        "nearest = list(sentence_nearest(encoder=embedding.encoder, vector=embedding.vector, limit=1))\n"
        "print(json.dumps({'migrate': migrated.getvalue(), 'corpora': sorted(Corpus.objects.values_list('name', flat=True)), "
        "'nearest': nearest[0].sentence.text == embedding.sentence.text}))"
    )
    read_back = json.loads(deployed.manage("shell", "-c", code, database="aligner_restored").strip().splitlines()[-1])
    assert "No migrations to apply" in read_back.pop("migrate")
    assert read_back == {"corpora": sorted([*SMALL_CORPORA, BIG_CORPUS]), "nearest": True}
