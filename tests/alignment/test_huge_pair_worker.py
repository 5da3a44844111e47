"""The reported case: a pair of ~218,000 sentences on the only worker, in bounded memory, cancellable within 5 s.

Before, one ``Aligner.align`` call held the worker for 19 minutes and 1.2 GB, a cancel was ignored
(the run ended "succeeded"), and another user's one-pair run waited behind it. Now the pair is
planned and aligned block by block: the run gives its worker back between blocks, so another
user's run starts within 30 s on the same single worker, and a cancel stops it after the block in
flight.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from alignment.aligning.service import alignment_run_cancel, alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun, PairBlock
from alignment.services import corpus_get_or_create
from tests.alignment.test_huge_pairs import CONFIG, LEXICAL
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from tests.markers import PROCESS_LEVEL

pytestmark = [pytest.mark.django_db(transaction=True), *PROCESS_LEVEL]
COMPLEX_SENTENCES = 131_000  # and 87,334 simple ones: 218,334 sentences in one pair
OTHER_RUN_STARTS_WITHIN_SECONDS = 30
CANCEL_WITHIN_SECONDS = 5
WORKER_MEMORY_BOUND_MB = 1200  # peak resident memory of the worker (torch and Django included): the old path used 1.2 GB more


def short_texts(count: int) -> tuple[list[str], list[str]]:
    """``count`` short complex sentences (a 5 MB file holds them) and a simple one for two of every three."""
    nouns = ["Bees", "Rain", "Boats", "Cats", "Trams", "Kids", "Rivers", "Bells"]
    verbs = ["fly", "fall", "sail", "sleep", "stop", "play", "flow", "ring"]
    complex_sentences = [f"{nouns[i % 8]} {verbs[(i // 8) % 8]} at hour {i} today." for i in range(count)]
    simple = [f"{nouns[i % 8]} {verbs[(i // 8) % 8]} at {i}." for i in range(count) if i % 3 != 2]
    return simple, complex_sentences


def _wait(what: str, condition, worker: subprocess.Popen, timeout: float) -> float:
    started = time.monotonic()
    while not condition():
        assert worker.poll() is None, f"the worker exited while waiting for {what}"
        assert time.monotonic() - started < timeout, f"gave up waiting {timeout} s for {what}"
        time.sleep(0.1)
    return time.monotonic() - started


def _peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def test_a_218000_sentence_pair_shares_the_only_worker_and_stops_within_5_s(owner, worker_subprocess_env, python_executable, tmp_path):
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    book, _ = corpus_get_or_create(name="Anna's book", language="en", owner=anna)
    simple, complex_sentences = short_texts(COMPLEX_SENTENCES)
    files = [("Book-adv.txt", "\n".join(complex_sentences).encode()), ("Book-ele.txt", "\n".join(simple).encode())]
    report = corpus_import_files(corpus=book, files=files, options=ImportOptions(format="presplit"))
    assert not report.errors and report.sentences_created == len(simple) + len(complex_sentences) > 218_000
    small, _ = corpus_get_or_create(name="Bruno's", language="en", owner=owner)
    corpus_import_files(
        corpus=small, files=[("Tram-adv.txt", SAMPLE_ADV.encode()), ("Tram-ele.txt", SAMPLE_ELE.encode())],
        options=ImportOptions(format="text"),
    )  # fmt: skip
    huge = alignment_run_create(corpus=book, aligner_config=CONFIG, measures=LEXICAL, created_by=anna)
    sliced = _worker(worker_subprocess_env, python_executable, tmp_path / "sliced.log", slice_seconds=5)
    try:
        _wait("the huge pair's first block", lambda: PairBlock.objects.filter(run=huge, done=True).exists(), sliced, timeout=240)
        assert PairBlock.objects.filter(run=huge).count() == -(-len(simple) // (settings.ALIGN_BLOCK_ROWS // 9))  # planned whole; 3-merges
        other = alignment_run_create(corpus=small, aligner_config={"measure": "jaccard"}, created_by=owner)
        waited = _wait(
            "Bruno's one-pair run to start", lambda: AlignmentRun.objects.get(pk=other.pk).started_at is not None, sliced,
            timeout=OTHER_RUN_STARTS_WITHIN_SECONDS,
        )  # fmt: skip
        _wait("Bruno's run to finish", lambda: AlignmentRun.objects.get(pk=other.pk).status == "succeeded", sliced, timeout=60)
        peak = _peak_memory_mb(sliced.pid)
    finally:
        _stop(sliced)
    # A worker that never gives its turn back (JOB_SLICE_SECONDS=0): the cancel meets the run in the middle of a block.
    whole = _worker(worker_subprocess_env, python_executable, tmp_path / "whole.log", slice_seconds=0)
    try:
        done = PairBlock.objects.filter(run=huge, done=True).count()
        _wait("the huge run to go on", lambda: PairBlock.objects.filter(run=huge, done=True).count() > done, whole, timeout=120)
        assert alignment_run_cancel(run=huge).cancel_requested, "the run was running when the cancel came"
        stopped = _wait(
            "the cancel", lambda: AlignmentRun.objects.get(pk=huge.pk).status == "cancelled", whole, timeout=CANCEL_WITHIN_SECONDS
        )
        peak = max(peak, _peak_memory_mb(whole.pid))
    finally:
        _stop(whole)
    for log in ("sliced.log", "whole.log"):
        text = (tmp_path / log).read_text()
        assert "Traceback" not in text, text[-3000:]
    assert peak < WORKER_MEMORY_BOUND_MB, f"a worker peaked at {peak:.0f} MB"
    blocks = PairBlock.objects.filter(run=huge, done=True)
    print(f"other run started after {waited:.1f} s; cancel took {stopped:.1f} s; worker peak {peak:.0f} MB; {blocks.count()} blocks done")


def _worker(env: dict[str, str], python: str, log: Path, *, slice_seconds: int) -> subprocess.Popen:
    return subprocess.Popen(
        [python, "manage.py", "procrastinate", "worker", "--name", f"worker-{log.stem}", "--concurrency", "1"],
        env={**env, "JOB_SLICE_SECONDS": str(slice_seconds), "LOG_LEVEL": "WARNING"},
        cwd=settings.BASE_DIR,
        stdout=open(log, "w"),  # the child writes to it until the end
        stderr=subprocess.STDOUT,
    )


def _stop(worker: subprocess.Popen) -> None:
    worker.terminate()
    worker.wait(timeout=60)
