"""A database outage logs one short line per request and one traceback per outage (webapp/error_views.py).

Before, Django logged every request that failed for want of the database with its whole traceback (8.6 KB):
88 s of outage under 20 clients wrote 25.9 MB. The outage here is real: the web process's database settings
point at a socket directory with no server in it, so every connection fails as it does while PostgreSQL restarts.
"""

from __future__ import annotations

import logging
import sys

import pytest
from django.db import connection
from django.test import Client

from webapp import error_views
from webapp.error_views import DatabaseOutage, DatabaseOutageLog

REQUESTS = 20


class _Outage:
    """While active, new connections go to a directory where no server listens."""

    def __init__(self, tmp_path) -> None:
        self.nowhere = str(tmp_path)
        self.host = connection.settings_dict["HOST"]

    def __enter__(self) -> None:
        connection.close()
        connection.settings_dict["HOST"] = self.nowhere

    def __exit__(self, *exc_info: object) -> None:
        connection.close()
        connection.settings_dict["HOST"] = self.host


def _request_log(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "django.request"]


def _written(records: list[logging.LogRecord]) -> int:
    """Bytes the console handler writes for these records (its formatter: the message, then any traceback)."""
    formatter = logging.Formatter()
    return sum(len(formatter.format(record).encode()) + 1 for record in records)


@pytest.mark.django_db(transaction=True)  # the test closes and reopens the connection
def test_an_outage_logs_one_line_per_request_and_one_traceback(owner, tmp_path, caplog) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(owner)  # the session is cached in the process: the failing query is the user's
    error_views.database_outage.database_answered()  # whatever an earlier test left: the database answers now
    caplog.clear()
    with caplog.at_level(logging.WARNING), _Outage(tmp_path):
        responses = [client.get("/") for _ in range(REQUESTS)]
    assert {(r.status_code, r["Retry-After"]) for r in responses} == {(503, "5")}
    lines = _request_log(caplog)
    assert len(lines) == REQUESTS, [r.getMessage() for r in caplog.records]
    assert sum(record.exc_info is not None for record in caplog.records) == 1, "one traceback for the whole outage"
    assert lines[0].exc_info is not None, "the outage's first failure keeps its traceback"
    for record in lines:
        message = record.getMessage()
        assert "\n" not in message and message.startswith("GET / 503: the database is not answering (OperationalError: ")
    # 19 short lines and one traceback, against 20 tracebacks of about 8 KB before.
    assert _written(lines[1:]) < 300 * (REQUESTS - 1)


@pytest.mark.django_db(transaction=True)
def test_a_page_that_reaches_the_database_again_ends_the_outage(owner, tmp_path, caplog) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    error_views.database_outage.database_answered()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for _ in range(2):  # two outages, with a page served in between
            with _Outage(tmp_path):
                assert [client.get("/").status_code for _ in range(3)] == [503] * 3
            assert client.get("/").status_code == 200
    tracebacks = [record for record in _request_log(caplog) if record.exc_info is not None]
    assert len(tracebacks) == 2 and len(_request_log(caplog)) == 6


def test_a_failure_after_a_quiet_interval_starts_a_new_outage() -> None:
    now = [0.0]
    outage = DatabaseOutage(quiet_seconds=60, clock=lambda: now[0])
    seen = []
    for t in (0, 1, 30, 89, 150, 151):  # 150 comes 61 s after the last failure
        now[0] = t
        seen.append(outage.failure_starts_outage())
    assert seen == [True, False, False, False, True, False]
    outage.database_answered()
    assert outage.failure_starts_outage()


def test_errors_other_than_a_lost_database_keep_their_message_and_traceback() -> None:
    log = DatabaseOutageLog(DatabaseOutage())
    for _ in range(2):
        try:
            raise ValueError("a bug")
        except ValueError:
            record = logging.LogRecord(
                "django.request", logging.ERROR, __file__, 1, "%s: %s", ("Internal Server Error", "/"), sys.exc_info()
            )
        assert log.filter(record) and record.exc_info is not None and record.getMessage() == "Internal Server Error: /"
