"""Fixtures for tests that run a real Procrastinate worker against the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from procrastinate.contrib.django import app

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create

REPO_ROOT = Path(__file__).resolve().parents[2]

LEXICAL = ["tfidf_cosine", "char3_tfidf_cosine", "jaccard"]
TFIDF_CONFIG = {"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"}

STORIES = {
    "Bees": (
        "Honeybees visit thousands of flowers every day to collect nectar.\nThey turn the nectar into honey inside the hive.\n",
        "Bees visit many flowers every day.\nThey collect nectar.\nThey turn the nectar into honey in the hive.\n",
    ),
    "Rain": (
        "Heavy rain flooded the main road through the village on Monday.\nThe school stayed closed for two days.\n",
        "Rain flooded the main road in the village.\nThe school was closed for two days.\n",
    ),
    "Moon": (
        "The space agency will send a small robot to the moon next year.\nIt will search for frozen water near the south pole.\n",
        "A small robot will go to the moon next year.\nIt will look for ice near the south pole.\n",
    ),
}


def _stories_corpus(owner, name: str, copies: int):
    """STORIES imported presplit ``copies`` times into the corpus ``name`` (a number after each story's name past one copy)."""
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    files = [
        (f"{story}{copy if copies > 1 else ''}-{level}.txt", text.encode())
        for copy in range(copies)
        for story, texts in STORIES.items()
        for level, text in zip(("adv", "ele"), texts)
    ]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors, report.errors
    return corpus


@pytest.fixture
def stories(owner):
    """Three short two-level stories imported presplit into the corpus "Stories" (three pairs)."""
    return _stories_corpus(owner, "Stories", 1)


@pytest.fixture
def six_pairs(owner):
    """The three stories twice: six pairs, one more than a run someone waits for at a page (INTERACTIVE_PAIRS)."""
    corpus = _stories_corpus(owner, "Six stories", 2)
    assert corpus.pairs.count() == 6
    return corpus


@pytest.fixture
def run_worker(transactional_db):
    """Run an in-process worker until the queue is empty (``wait=False``).

    Procrastinate's tables are not flushed between transactional tests, so
    jobs left by earlier tests are removed first.
    """
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")

    def work(queues: list[str] | None) -> None:
        with app.replace_connector(app.connector.get_worker_connector()):
            app.run_worker(queues=queues, wait=False, install_signal_handlers=False, listen_notify=False)

    def run(queues: list[str] | None = None) -> None:
        # its own thread (and asyncio loop): after the browser tests, pytest-playwright keeps a loop running here
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(work, queues).result()

    return run


@pytest.fixture
def worker_subprocess_env() -> dict[str, str]:
    """Environment for a ``manage.py procrastinate worker`` child that uses the test database."""
    params = connection.settings_dict
    url = f"postgresql://{params['USER']}@{quote(str(params['HOST']), safe='')}/{params['NAME']}"
    if params.get("PORT"):
        url = f"postgresql://{params['USER']}:{params.get('PASSWORD', '')}@{params['HOST']}:{params['PORT']}/{params['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(REPO_ROOT)}


@pytest.fixture
def python_executable() -> str:
    return sys.executable


@contextmanager
def worker_processes(env: dict[str, str], log_dir: Path, prefix: str, count: int = 2) -> Iterator[list[subprocess.Popen]]:
    """``count`` real ``manage.py procrastinate worker`` processes (named ``<prefix>-<n>``, logs in ``log_dir``), once
    each has registered with Procrastinate; stopped (SIGTERM, then waited for) when the block ends."""
    newest = _newest_worker_id()
    workers = [
        subprocess.Popen(
            [sys.executable, "manage.py", "procrastinate", "worker", "--name", f"{prefix}-{n}"],
            env=env,
            cwd=REPO_ROOT,
            stdout=open(log_dir / f"worker-{n}.log", "w"),  # noqa: SIM115 - the child writes to it until the end
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        for n in range(1, count + 1)
    ]
    try:
        wait_with_workers("the workers to start", lambda: _newest_worker_id(after=newest) == count, workers, timeout=180)
        yield workers
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)


def _newest_worker_id(*, after: int | None = None) -> int:
    """The newest Procrastinate worker's id; with ``after``, how many workers registered since that id."""
    with connection.cursor() as cursor:
        if after is None:
            cursor.execute("SELECT coalesce(max(id), 0) FROM procrastinate_workers")
        else:
            cursor.execute("SELECT count(*) FROM procrastinate_workers WHERE id > %s", [after])
        return cursor.fetchone()[0]


def wait_with_workers(what: str, condition: Callable[[], bool], workers: list[subprocess.Popen], timeout: float) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` when a worker exits or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert all(w.poll() is None for w in workers), f"a worker exited while waiting for {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def synthetic_sentences(count: int) -> list[str]:
    subjects = ["The council", "A farmer", "The museum", "Our team", "The river", "A student", "The company", "The mayor"]
    verbs = ["opened", "studied", "painted", "measured", "described", "cleaned", "visited", "announced"]
    objects = ["a new bridge", "the old harbour", "three gardens", "the village school", "a small boat", "the main road"]
    return [
        f"{subjects[i % len(subjects)]} {verbs[(i // 8) % len(verbs)]} {objects[(i // 64) % len(objects)]} on day {i}."
        for i in range(count)
    ]


@pytest.fixture
def big_corpus(owner):
    """One long document (``count`` sentences) for tests that need a job lasting a few seconds."""

    def make(count: int):
        corpus, _ = corpus_get_or_create(name=f"Synthetic {count}", language="en", owner=owner)
        sentences = synthetic_sentences(count)
        paragraphs = "\n\n".join("\n".join(sentences[i : i + 20]) for i in range(0, count, 20))
        report = corpus_import_files(corpus=corpus, files=[("Big-adv.txt", paragraphs.encode())], options=ImportOptions(format="presplit"))
        assert not report.errors
        return corpus

    return make
