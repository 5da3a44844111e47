"""PostgreSQL restarts under load: nothing acknowledged is lost, the worker carries on, queued work runs afterwards.

Before, a one-second ``pg_ctl restart -m fast`` made the Procrastinate worker exit for good
(``ConnectorException('Database error.')``), and every job sat queued until someone noticed. Here
the app runs as a team runs it, as separate processes (gunicorn, a worker), once on the embedded
PostgreSQL and once on a separate server over TCP. Twenty annotators save labels as the
annotation screen does (each action with a client id, resent after a 503 or a dropped
connection) for 16 s; meanwhile an embedding job is under way, and the server is stopped, kept
down for a few seconds, and started again. An alignment run is requested through the API while
the server is down (the script retries until the app answers). Afterwards: every acknowledged
label is stored exactly once and nothing else is, the worker process is the same one, the
embedding job finished with every sentence embedded once, and the alignment run finished.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import requests
from pgserver._commands import POSTGRES_BIN_PATH

from tests.markers import PROCESS_LEVEL
from tests.webapp.pg_server import PostgresServer, free_port, postgres_server_start

pytestmark = [pytest.mark.deployment, *PROCESS_LEVEL]

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLIENTS = 20
LOAD_SECONDS = 16  # labels saved before, during and after the outage; longer only repeats the same
OUTAGE_AT_SECONDS = 5
OUTAGE_SECONDS = 3
SENTENCES = 40  # per side of the one document pair every annotator labels: 1,600 sentence pairs each
PASSWORD = "label-pass-123"
SYSTEM_USER = "pgserver" if os.geteuid() == 0 else None  # PostgreSQL refuses to run as root

# One process for what a deploy runs and the story's data (each Django start costs seconds): migrate, collectstatic,
# the team, and a signed-in session per annotator (the login form's PBKDF2 check, twenty times, cost ~20 s here and is
# not what is under test). Prints the session keys.
SETUP = """
import json
from django.contrib.auth import get_user_model
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create, embedding_run_create
from annotation import services
from tests.alignment.conftest import synthetic_sentences
call_command("migrate", interactive=False, verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)
User = get_user_model()
lead = User.objects.create_superuser("lead", "lead@example.org", {password!r})
corpus, _ = corpus_get_or_create(name="Restart", language="en", owner=lead)
lines = synthetic_sentences(2 * {sentences})
files = [("Story-adv.txt", "\\n".join(lines[:{sentences}]).encode()), ("Story-ele.txt", "\\n".join(lines[{sentences}:]).encode())]
assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
project = services.project_create(name="Restart", corpus=corpus, created_by=lead, overlap={clients})
sessions = {{}}
for k in range({clients}):
    annotator = User.objects.create_user(f"annot{{k}}")
    services.membership_set(project=project, user=annotator, role="annotator")
    client = Client()
    client.force_login(annotator)
    sessions[annotator.username] = client.cookies["sessionid"].value
services.assignments_distribute(project=project)
big, _ = corpus_get_or_create(name="Big", language="en", owner=lead)
big_lines = synthetic_sentences(600)
text = "\\n\\n".join("\\n".join(big_lines[i:i + 20]) for i in range(0, 600, 20))
assert not corpus_import_files(corpus=big, files=[("Big-adv.txt", text.encode())], options=ImportOptions(format="presplit")).errors
embedding_run_create(corpus=big, encoder_name=settings.ENCODER_MODEL)
print("SESSIONS", json.dumps(sessions))
"""


class App:
    """The app's processes around one database, and ways to restart that database and read it."""

    def __init__(self, root: Path, env: dict[str, str], pgdata: Path, connect: Callable[[], psycopg.Connection]) -> None:
        self.root = root
        self.env = env
        self.pgdata = pgdata
        self.connect = connect
        self.processes: dict[str, subprocess.Popen] = {}
        self.url = ""
        self.start_options = ""

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, f"manage.py {args[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        return result.stdout

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")  # noqa: SIM115 - the process writes to it for its whole life
        self.processes[name] = subprocess.Popen(command, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        return self.processes[name]

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def logs(self) -> str:
        return "\n".join(f"--- {name} ---\n{self.log(name)[-3000:]}" for name in self.processes)

    def server_start(self) -> None:
        """``pg_ctl start`` with the options the server last ran with (the embedded one's socket directory among them)."""
        options = shlex.split(self.start_options)
        self.pg_ctl("-l", str(self.root / "postgres-restart.log"), *(["-o", shlex.join(options)] if options else []), "start")

    def server_stop(self) -> None:
        """``pg_ctl stop -m fast``, after noting how the server was started."""
        command = shlex.split((self.pgdata / "postmaster.opts").read_text())[1:]  # the postgres binary, then its options
        while "-D" in command:
            at = command.index("-D")
            del command[at : at + 2]
        self.start_options = shlex.join(command)
        self.pg_ctl("-m", "fast", "stop")

    def pg_ctl(self, *args: str) -> None:
        with tempfile.TemporaryFile("w+") as out:
            result = subprocess.run(
                [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self.pgdata), "-w", *args], stdout=out, stderr=subprocess.STDOUT,
                user=SYSTEM_USER, timeout=120,
            )  # fmt: skip
            out.seek(0)
            assert result.returncode == 0, f"pg_ctl {' '.join(args)}: {out.read()}"

    def sql(self, query: str, *params) -> list[tuple]:
        with self.connect() as connection:
            return connection.execute(query, params).fetchall()

    def wait_for(self, what: str, condition: Callable[[], bool], timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            dead = [name for name, process in self.processes.items() if process.poll() is not None]
            assert not dead, f"{dead} exited while waiting for {what}\n{self.logs()}"
            assert time.monotonic() < deadline, f"gave up waiting for {what}\n{self.logs()}"
            time.sleep(0.5)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _base_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "STATE_DIR", "EMBEDDED_DB_DELETE_ON_EXIT", "DEBUG"}}
    return {
        **env, "PYTHONPATH": str(REPO_ROOT), "STATE_DIR": str(root / "state"), "SECRET_KEY": "restart-test-key", "DEBUG": "0",
        "LOG_LEVEL": "WARNING", "EMBEDDING_BATCH_SIZE": "16", "JOB_TEST_STEP_DELAY_MS": "300", "JOB_SLICE_SECONDS": "0",
        "JOB_DATABASE_RETRY_SECONDS": "2", "STALLED_JOB_SECONDS": "15", "WORKER_RECONNECT_MAX_SECONDS": "4",
        "DB_CONN_MAX_AGE": "60", "AXES_ENABLED": "0",
    }  # fmt: skip


@pytest.fixture(params=["embedded", "tcp"])
def app(request) -> Iterator[App]:
    root = Path(tempfile.mkdtemp(prefix="db-restart-"))
    os.chmod(root, 0o777)
    server: PostgresServer | None = None
    deployed: App | None = None
    try:
        if request.param == "tcp":
            server = postgres_server_start(root)
            env = {**_base_env(root), "DATABASE_URL": server.url("aligner")}
            deployed = App(root, env, server.pgdata, lambda: server.connect("aligner"))
        else:
            pgdata = root / "state" / "postgres"
            socket = {"value": None}

            def connect() -> psycopg.Connection:
                if socket["value"] is None:  # the embedded server writes its socket directory into postmaster.pid
                    socket["value"] = (pgdata / "postmaster.pid").read_text().splitlines()[4]
                return psycopg.connect(host=socket["value"], user="postgres", dbname="aligner", autocommit=True)

            deployed = App(root, _base_env(root), pgdata, connect)
        yield deployed
    finally:
        if deployed is not None:
            deployed.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Annotator:
    """One label-saving client: what it made, what the server acknowledged, and what went wrong."""

    name: str
    acknowledged: dict[str, int] = field(default_factory=dict)  # client action id -> event id
    retries: int = 0
    refusals: list[str] = field(default_factory=list)

    session: requests.Session | None = None

    def open_screen(self, site: str, session_key: str, project: int, pair: int) -> None:
        """Signed in (the session the setup made), the annotation screen opened: it sets the CSRF cookie the saves send."""
        self.session = requests.Session()
        self.session.cookies.set("sessionid", session_key)
        screen = self.session.get(f"{site}/annotate/projects/{project}/pairs/{pair}/", timeout=120)
        assert screen.status_code == 200 and "csrftoken" in self.session.cookies, f"{self.name}: {screen.status_code} {screen.url}"

    def run(self, site: str, project: int, pair: int, items: list[tuple[int, int]], stop: threading.Event) -> None:
        """Label items one after the other until ``stop``; each action is sent until the server answers it."""
        session = self.session
        url = f"{site}/annotate/projects/{project}/pairs/{pair}/label/"
        for simple, complex_ in items:
            if stop.is_set():
                return
            action = uuid.uuid4().hex
            body = {"simple_sentence_id": simple, "complex_sentence_id": complex_, "label": "aligned", "expected_previous": "",
                    "seconds_spent": "1.5", "client_action_id": action}  # fmt: skip
            deadline = time.monotonic() + 120  # a save waits out the outage, as the screen's queue does
            while True:
                try:
                    answer = session.post(url, data=body, headers=_headers(session), timeout=30)
                except requests.RequestException:
                    answer = None
                if answer is not None and answer.status_code == 200:
                    self.acknowledged[action] = answer.json()["event"]
                    break
                if answer is not None and answer.status_code < 500:
                    self.refusals.append(f"{answer.status_code}: {answer.text[:200]}")
                    break
                assert time.monotonic() < deadline, f"{self.name}'s save got no answer for 120 s"
                self.retries += 1
                time.sleep(0.3)


def _headers(session: requests.Session) -> dict[str, str]:
    return {"X-CSRFToken": session.cookies.get("csrftoken", ""), "Accept": "application/json"}


def _request_run_until_answered(site: str, token: str, corpus: int, into: list) -> None:
    """The API call a script makes during the outage: retried on 503 or no connection until the app answers."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            answer = requests.post(f"{site}/api/alignment-runs/", headers={"Authorization": f"Token {token}"},
                                   json={"corpus": corpus, "measure": "jaccard"}, timeout=30)  # fmt: skip
        except requests.RequestException:
            answer = None
        if answer is not None and answer.status_code != 503 and answer.status_code < 500:
            into.append(answer)
            return
        into.append(answer.status_code if answer is not None else "no connection")
        time.sleep(0.5)


def test_a_database_restart_under_twenty_label_saving_clients_loses_nothing(app: App) -> None:
    """Long because it is one story: set up, load, outage, then every check on what is stored."""
    output = app.manage("shell", "-c", SETUP.format(password=PASSWORD, sentences=SENTENCES, clients=CLIENTS))
    sessions = json.loads(output.split("SESSIONS", 1)[1])
    port = free_port()
    app.start("web", [str(BIN / "gunicorn"), "webapp.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "3", "--no-control-socket"])
    worker = app.start("worker", [sys.executable, "manage.py", "procrastinate", "worker"])
    site = app.url = f"http://127.0.0.1:{port}"

    def answers(path: str) -> bool:
        try:
            return requests.get(f"{site}{path}", timeout=30).status_code == 200
        except requests.RequestException:
            return False

    app.wait_for("the web server and a worker", lambda: answers("/readyz"))
    embedding = "SELECT status, attempts, batches_done FROM alignment_embeddingrun"
    app.wait_for("the embedding job to be under way", lambda: app.sql(embedding)[0][2] >= 2)
    project, pair = app.sql("SELECT a.project_id, a.pair_id FROM annotation_assignment a LIMIT 1")[0]
    simple = [
        row[0]
        for row in app.sql(
            "SELECT s.id FROM alignment_sentence s JOIN alignment_documentpair p ON p.simple_document_id = s.document_id WHERE p.id = %s ORDER BY s.index",
            pair,
        )
    ]
    complex_ = [
        row[0]
        for row in app.sql(
            "SELECT s.id FROM alignment_sentence s JOIN alignment_documentpair p ON p.complex_document_id = s.document_id WHERE p.id = %s ORDER BY s.index",
            pair,
        )
    ]
    items = [(s, c) for s in simple for c in complex_]
    corpus = app.sql("SELECT id FROM alignment_corpus WHERE name = 'Restart'")[0][0]
    token = requests.post(f"{site}/api/auth/token/", json={"username": "lead", "password": PASSWORD}, timeout=30).json()["token"]

    annotators = [Annotator(f"annot{k}") for k in range(CLIENTS)]
    for annotator in annotators:
        annotator.open_screen(site, sessions[annotator.name], project, pair)
    stop = threading.Event()
    threads = [threading.Thread(target=a.run, args=(site, project, pair, items, stop)) for a in annotators]
    for thread in threads:
        thread.start()
    time.sleep(OUTAGE_AT_SECONDS)
    acknowledged_before_outage = sum(len(a.acknowledged) for a in annotators)
    app.server_stop()
    run_request: list = []
    requester = threading.Thread(target=_request_run_until_answered, args=(site, token, corpus, run_request))
    requester.start()
    time.sleep(OUTAGE_SECONDS)
    app.server_start()
    time.sleep(max(0, LOAD_SECONDS - OUTAGE_AT_SECONDS - OUTAGE_SECONDS))
    stop.set()
    for thread in [*threads, requester]:
        thread.join(timeout=180)

    # Every label the server acknowledged is stored, once; nothing else was stored; nothing was refused.
    assert not [a.refusals for a in annotators if a.refusals], [a.refusals[:3] for a in annotators if a.refusals]
    acknowledged = {(a.name, action): event for a in annotators for action, event in a.acknowledged.items()}
    stored = app.sql("SELECT u.username, e.client_action_id, e.id FROM annotation_labelevent e JOIN auth_user u ON u.id = e.annotator_id")
    assert {(name, action): event for name, action, event in stored} == acknowledged
    assert len(stored) == len(acknowledged) > acknowledged_before_outage > 0
    assert sum(a.retries for a in annotators) > 0, "the outage was felt: some saves were answered 503 or not at all, and resent"

    # The same worker process carried on: the in-flight embedding job finished, every sentence embedded once.
    app.wait_for("the embedding job", lambda: app.sql(embedding)[0][0] == "succeeded", timeout=600)
    assert worker.poll() is None, f"the worker must survive the restart\n{app.log('worker')[-3000:]}"
    sentences, vectors, distinct = app.sql(
        "SELECT (SELECT count(*) FROM alignment_sentence s JOIN alignment_document d ON d.id = s.document_id "
        "        JOIN alignment_corpus c ON c.id = d.corpus_id WHERE c.name = 'Big'), count(*), count(DISTINCT e.sentence_id) "
        "FROM alignment_sentenceembedding e"
    )[0]  # fmt: skip
    assert vectors == distinct >= sentences == 600

    # The alignment run requested during the outage was accepted once the app answered, and ran.
    accepted = run_request[-1]
    assert isinstance(accepted, requests.Response) and accepted.status_code == 201, run_request
    assert any(attempt == 503 or attempt == "no connection" for attempt in run_request[:-1]), f"requested during the outage: {run_request}"
    run_id = accepted.json()["id"]
    app.wait_for(
        "the run requested during the outage",
        lambda: app.sql("SELECT status FROM alignment_alignmentrun WHERE id = %s", run_id)[0][0] == "succeeded",
    )
    assert "lost the database" in app.log("worker") or "starting it again" in app.log("worker"), app.log("worker")[-3000:]
