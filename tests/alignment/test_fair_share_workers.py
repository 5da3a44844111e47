"""One user's heavy work never blocks everyone else's, with real worker processes as ``runapp`` starts them.

User A queues two large imports (every file is a step the test slows down, so each import lasts
minutes); user B then asks for an alignment run of one pair. Before, the first worker free took
A's second import and B waited behind both; now A's jobs share A's one lane, and B's run starts
on the other worker within seconds.
"""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from procrastinate.contrib.django.models import ProcrastinateJob

from alignment.aligning.service import alignment_run_create
from alignment.importing.jobs import import_job_create
from alignment.importing.models import ImportJob
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import AlignmentRun
from alignment.services import corpus_get_or_create
from tests.alignment.conftest import synthetic_sentences, wait_with_workers, worker_processes
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from tests.markers import PROCESS_LEVEL

pytestmark = [pytest.mark.django_db(transaction=True), *PROCESS_LEVEL]
B_MUST_START_WITHIN_SECONDS = 30


def _large_import(user, name: str) -> ImportJob:
    lines = synthetic_sentences(400)
    files = [(f"{name}{k}-adv.txt", "\n".join(lines[k * 10 : k * 10 + 10]).encode()) for k in range(40)]
    options = ImportOptions(format="presplit")
    return import_job_create(user=user, corpus_name=name, language="en", pairing="all", options=options, files=files)


def test_while_a_runs_two_large_imports_bs_one_pair_alignment_starts_within_30_s(owner, worker_subprocess_env, tmp_path) -> None:
    anna = get_user_model().objects.create_user("anna", password="anna-pass-123")
    bruno = owner
    corpus, _ = corpus_get_or_create(name="Bruno's", language="en", owner=bruno)
    corpus_import_files(
        corpus=corpus, files=[("Tram-adv.txt", SAMPLE_ADV.encode()), ("Tram-ele.txt", SAMPLE_ELE.encode())],
        options=ImportOptions(format="text"),
    )  # fmt: skip
    env = {**worker_subprocess_env, "JOB_TEST_STEP_DELAY_MS": "3000", "LOG_LEVEL": "WARNING"}  # 40 files x 3 s: 2 min per import
    with worker_processes(env, tmp_path, "test-worker") as workers:
        imports = [_large_import(anna, "Anna big"), _large_import(anna, "Anna bigger")]
        wait_with_workers("A's first import", lambda: ImportJob.objects.get(pk=imports[0].pk).status == "running", workers, timeout=180)
        time.sleep(2)  # the idle worker had its chance at A's second import
        run = alignment_run_create(corpus=corpus, pairs=list(corpus.pairs.all()), aligner_config={"measure": "jaccard"}, created_by=bruno)
        deadline = time.monotonic() + B_MUST_START_WITHIN_SECONDS
        while AlignmentRun.objects.get(pk=run.pk).started_at is None:
            assert time.monotonic() < deadline, f"B's one-pair run did not start within {B_MUST_START_WITHIN_SECONDS} s"
            time.sleep(0.2)
        statuses = dict(ImportJob.objects.filter(pk__in=[job.pk for job in imports]).values_list("pk", "status"))
        assert statuses[imports[0].pk] == "running", "A's large import was still running when B's run started"
        assert statuses[imports[1].pk] == "queued"
        second_task = ProcrastinateJob.objects.get(pk=ImportJob.objects.get(pk=imports[1].pk).procrastinate_job_id)
        assert second_task.status == "todo", "A's second import waits in A's lane instead of taking the other worker"
