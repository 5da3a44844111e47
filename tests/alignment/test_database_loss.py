"""A lost database is a pause, not a failure: the worker carries on and the job in flight is retried, not failed.

The server closes every connection but the test's own (``pg_terminate_backend``), which is what a
worker sees when PostgreSQL restarts; tests/webapp/test_database_restart.py restarts a real server
under load.
"""

from __future__ import annotations

import subprocess
import time

import psycopg
import pytest
from django.conf import settings
from django.db import DatabaseError, connection

from alignment import services
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.jobs.database import DatabaseLost, database_lost
from alignment.models import EmbeddingRun, SentenceEmbedding
from tests.conftest import SAMPLE_ADV

pytestmark = pytest.mark.django_db(transaction=True)


def _cut_every_other_connection() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _wait_for(what: str, condition, worker: subprocess.Popen, log, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert worker.poll() is None, f"the worker exited (status {worker.returncode}) while waiting for {what}:\n{_tail(log)}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}:\n{_tail(log)}"
        time.sleep(0.1)


def _tail(log) -> str:
    log.flush()
    with open(log.name, encoding="utf-8", errors="replace") as handle:
        return handle.read()[-4000:]


@pytest.mark.slow  # a real worker process
def test_a_worker_whose_connections_are_cut_carries_on_and_its_job_in_flight_finishes(
    big_corpus, worker_subprocess_env, python_executable, tmp_path
) -> None:
    corpus = big_corpus(300)
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    env = {
        **worker_subprocess_env, "EMBEDDING_BATCH_SIZE": "16", "JOB_TEST_STEP_DELAY_MS": "200", "JOB_SLICE_SECONDS": "0",
        "JOB_DATABASE_RETRY_SECONDS": "1", "STALLED_JOB_SECONDS": "5", "WORKER_RECONNECT_MAX_SECONDS": "2", "LOG_LEVEL": "WARNING",
    }  # fmt: skip
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [python_executable, "manage.py", "procrastinate", "worker"], env=env, cwd=settings.BASE_DIR, stdout=log, stderr=log
        )
        try:
            _wait_for("the job to be under way", lambda: EmbeddingRun.objects.get(pk=run.pk).batches_done >= 2, worker, log)
            assert _cut_every_other_connection() >= 2  # the worker's pool, its LISTEN connection and the job's own
            _wait_for("the job to finish", lambda: EmbeddingRun.objects.get(pk=run.pk).status == EmbeddingRun.Status.SUCCEEDED, worker, log)
            assert worker.poll() is None, "the worker must survive the lost connections"
            # and it still takes new work: a job queued after the loss runs too
            second = services.embedding_run_create(corpus=big_corpus(20), encoder_name=settings.ENCODER_MODEL)
            _wait_for("a job queued after the loss", lambda: EmbeddingRun.objects.get(pk=second.pk).status == "succeeded", worker, log)
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    run.refresh_from_db()
    assert run.attempts == 2, "retried as after a killed worker: one more attempt, resumed from the stored batches"
    assert run.error == ""
    assert SentenceEmbedding.objects.filter(sentence__document__corpus=corpus).count() == 300  # each sentence once


def test_an_import_that_loses_the_database_raises_instead_of_blaming_the_file(corpus) -> None:
    """Before: the file was reported as refused ("the database refused the content") and never imported."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own_pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [own_pid])
    try:
        with pytest.raises(DatabaseError) as raised:
            corpus_import_files(corpus=corpus, files=[("Tram-adv.txt", SAMPLE_ADV.encode())], options=ImportOptions(format="text"))
        assert database_lost(raised.value)
    finally:
        connection.close()


def test_only_a_lost_connection_counts_as_a_lost_database() -> None:
    """By the error, not by the connection: Django reconnects after a failed rollback, so the connection answers again."""
    from django.db import IntegrityError, InterfaceError, OperationalError
    from psycopg import errors

    def django_wrapped(error: Exception) -> OperationalError:
        wrapper = OperationalError(str(error))
        wrapper.__cause__ = error
        return wrapper

    assert database_lost(InterfaceError("connection already closed"))
    assert database_lost(django_wrapped(errors.AdminShutdown("terminating connection due to administrator command")))
    assert database_lost(django_wrapped(errors.CannotConnectNow("the database system is starting up")))
    assert database_lost(django_wrapped(psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")))
    assert not database_lost(django_wrapped(errors.QueryCanceled("canceling statement due to statement timeout")))
    assert not database_lost(django_wrapped(errors.DeadlockDetected("deadlock detected")))
    assert not database_lost(IntegrityError("duplicate key value"))
    assert not database_lost(ValueError("a bug"))
    wrapped = ValueError("while storing")
    wrapped.__cause__ = errors.AdminShutdown("terminating connection due to administrator command")
    assert database_lost(wrapped) and database_lost(DatabaseLost("retry"))
