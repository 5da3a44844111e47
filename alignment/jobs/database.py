"""Telling a lost database from a job's own failure.

A job whose query broke because the server restarted (or the network dropped) did nothing
wrong: it is retried as after a kill, not marked failed (:mod:`alignment.jobs.wrapper`,
:meth:`alignment.jobs.models.Job.mark_failed_by`), and a worker that loses its connections
starts again (:mod:`alignment.jobs.worker`).

The connection's own state cannot tell: Django drops a connection whose rollback failed and
opens a new one on the next query, so by the time a service's ``except`` runs, the
connection may well answer again (after ``pg_terminate_backend``, or a restart that was
quick). What tells is the error itself: PostgreSQL's SQLSTATE class 08 (connection
exception) and 57P01–57P03 (the server is shutting down, crashed, or not accepting
connections yet), or a client-side error that carries no SQLSTATE at all (the socket
closed, the server cannot be reached).
"""

from __future__ import annotations

import psycopg
from django.db import InterfaceError, connection
from procrastinate.exceptions import ConnectorException

_SERVER_GONE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})  # admin_shutdown, crash_shutdown, cannot_connect_now


class DatabaseLost(Exception):
    """The database went away while a job ran; Procrastinate retries the job (JOB_DATABASE_RETRY_SECONDS later)."""


def database_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a lost database connection.

    A query error on a live connection (a constraint, a statement timeout, a deadlock) is the
    job's own failure; a connection the server closed, or one that cannot be made, is not.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DatabaseLost | ConnectorException | InterfaceError | psycopg.InterfaceError):
            return True
        if isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            return state is None or state.startswith("08") or state in _SERVER_GONE_SQLSTATES
        current = current.__cause__ or current.__context__
    return False


def commit_without_flush() -> None:
    """The current transaction's commit need not wait for its WAL to reach the disk (PostgreSQL's WAL writer flushes
    it within a second). For a job's own progress and results only: a database crash loses such a commit together with
    every commit after it (WAL is replayed in order), and the job, resumed from what was committed, does it again."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
