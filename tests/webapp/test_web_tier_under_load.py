"""The first minutes of ``scripts/run.sh``: pages answer within 2 s while the workers embed and align the demo.

Before, the first pages took 18–34 s: gunicorn listened before its five workers had loaded Django, which they
did side by side on the two cores that the two job workers filled with the demo's embedding. Now the master loads
the app once before it listens and forks ready workers (webapp/gunicorn_conf.py), and runapp's job workers run at
a lower CPU priority (WORKER_NICE), so a page waits neither for a worker to boot nor for the encoder's threads.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import requests

from tests.markers import process_level

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGE_SECONDS = 2.0
FINISHED = {"succeeded", "failed", "cancelled"}
WATCH_SECONDS = 15  # pages asked for while the embedding runs


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _web_processes_loading_torch(runapp: subprocess.Popen) -> tuple[int, list[int]]:
    """How many web processes runapp has (its gunicorn master and workers), and the pids of those that mapped torch."""
    web, torch = 0, []
    for child in psutil.Process(runapp.pid).children():
        try:
            if "gunicorn" not in " ".join(child.cmdline()):
                continue
            for process in (child, *child.children()):
                web += 1
                if any("torch" in mapped.path for mapped in process.memory_maps()):
                    torch.append(process.pid)
        except psutil.Error:  # gone meanwhile
            continue
    return web, torch


@process_level
def test_pages_answer_within_2_s_from_the_start_of_runapp_while_the_demo_embeds(tmp_path) -> None:
    """Process level: it runs the whole app as scripts/run.sh does (five web processes, two job workers, the demo's
    embedding and alignment filling the cores) and asserts how soon every page answers."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EMBEDDED_DB_DELETE_ON_EXIT", "DEBUG", "DEV_SERVER"}}
    # Short slices and batches: at the end, runapp's workers stop within seconds, mid-embedding (they finish the slice).
    env.update(STATE_DIR=str(tmp_path), LOG_LEVEL="WARNING", JOB_SLICE_SECONDS="2", EMBEDDING_BATCH_SIZE="32")
    for default in ("WEB_CONCURRENCY", "WORKER_PROCESSES", "WORKER_NICE"):  # scripts/run.sh's defaults
        env.pop(default, None)
    log = open(tmp_path / "runapp.log", "w+")  # noqa: SIM115 - runapp writes to it until the end of the test
    runapp = subprocess.Popen([sys.executable, "manage.py", "runapp", f"127.0.0.1:{port}"], cwd=REPO_ROOT, env=env, stdout=log, stderr=log)
    site = f"http://127.0.0.1:{port}"
    session = requests.Session()
    answers: list[tuple[float, str, int, float, str]] = []  # (since listening, path, status, seconds, embedding status)

    def page(path: str, embedding: str = "") -> requests.Response:
        started = time.monotonic()
        response = session.get(f"{site}{path}", timeout=60)
        answers.append((started - listening_at, path, response.status_code, time.monotonic() - started, embedding))
        return response

    try:
        deadline = time.monotonic() + 300  # the embedded database, the demo's migrations and import, collectstatic
        while not _listening(port):
            assert runapp.poll() is None, "runapp exited before it served"
            assert time.monotonic() < deadline, "runapp did not listen within 300 s"
            time.sleep(0.05)
        listening_at = time.monotonic()
        page("/accounts/login/")
        password = json.loads((tmp_path / "demo-credentials.json").read_text())["manager"]
        # Not timed: a password check is deliberately slow (PBKDF2), and it is no page.
        signed_in = session.post(
            f"{site}/accounts/login/",
            data={"username": "manager", "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
            timeout=60,
        )
        assert signed_in.status_code == 200 and "/accounts/login/" not in signed_in.url
        corpus = re.search(r'href="/corpora/(\d+)/"', page("/").text).group(1)
        embedding, embedding_since = "queued", None
        while embedding not in FINISHED and (embedding_since is None or time.monotonic() - embedding_since < WATCH_SECONDS):
            assert time.monotonic() - listening_at < 240, "the demo's embedding did not start within 240 s"
            html = page(f"/corpora/{corpus}/", embedding).text
            embedding = re.search(r'run-(\w+)" id="embedding-run-', html).group(1)
            page(f"/corpora/{corpus}/jobs/", embedding)  # the fragment the page polls every second
            page("/", embedding)
            if embedding == "running":
                embedding_since = embedding_since or time.monotonic()
                web, torch = _web_processes_loading_torch(runapp)
                assert web and not torch, f"web processes {torch} loaded torch"
            time.sleep(0.2)
    finally:
        runapp.send_signal(signal.SIGINT)
        runapp.wait(timeout=90)
        log.seek(0)
        output = log.read()
    slow = [answer for answer in answers if answer[2] != 200 or answer[3] > PAGE_SECONDS]
    assert not slow, f"pages slower than {PAGE_SECONDS} s (since listening, path, status, seconds, embedding): {slow}"
    assert sum(answer[4] == "running" for answer in answers) >= 10, f"too few pages while the demo embedded: {answers}"
    assert runapp.returncode == 0, output[-3000:]
