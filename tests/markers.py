"""Marks shared by test modules: what is slow, and what must not run beside its own kind.

``PROCESS_LEVEL`` is for tests that run the app as separate processes (gunicorn, Procrastinate workers,
``runapp``, a second PostgreSQL server) and either load the machine (twenty label-saving clients, two web
processes and two workers, the whole ``runapp``) or assert how soon something happens ("back within 10 s",
"starts within 30 s"). A test that only starts a worker and kills it (tests/webapp/test_job_kill.py) is just
``slow``: it asserts no time, and one worker process beside the other xdist worker's tests costs it nothing
but seconds.
Under ``pytest -n 2`` they form one xdist group, so they run one after another on one worker, never two at
once: two of them side by side would each take both cores, and their time bounds, which hold with the other
worker running ordinary tests, would then measure the contention. The group is scheduled first (it is the
longest unit of work; ``tests/conftest.py``), while the other worker takes the rest. They are also slow, so
the fast lane (``-m "not slow"``) leaves them out. CONTRIBUTING.md, "Running tests".
"""

from __future__ import annotations

import pytest

PROCESS_GROUP = "processes"
PROCESS_LEVEL = [pytest.mark.slow, pytest.mark.xdist_group(PROCESS_GROUP)]


def process_level(test):
    """Mark one test as PROCESS_LEVEL (a module whose every test is one sets ``pytestmark`` to include PROCESS_LEVEL)."""
    for mark in PROCESS_LEVEL:
        test = mark(test)
    return test
