"""``runapp`` supervises its children: a worker or web server that dies comes back, and the site keeps answering.

Before, a SIGKILLed worker made ``runapp`` stop gunicorn and the embedded database: the site
answered nothing until someone restarted it. The unit tests drive :class:`Supervisor` with small
Python children; the last two kill a worker of a real ``runapp`` (embedded PostgreSQL, gunicorn)
while a client keeps asking the site for pages, and its gunicorn master.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from django.core.management.base import CommandError

from alignment.jobs.backoff import Backoff
from tests.markers import process_level
from webapp.lib.supervisor import ChildSpec, Supervisor
from webapp.management.commands.runapp import child_specs

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_backoff_doubles_up_to_its_maximum_and_starts_again_after_a_long_run() -> None:
    backoff = Backoff(maximum=5)
    assert [backoff.after_run(0.1) for _ in range(5)] == [1, 2, 4, 5, 5]
    assert backoff.after_run(3600) == 1 and backoff.restarts == 6


def _supervise(specs: list[ChildSpec]) -> tuple[Supervisor, list[str]]:
    messages: list[str] = []
    return Supervisor(specs, log=messages.append, max_wait=1, stop_timeout=5), messages


def _tick_until(supervisor: Supervisor, condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting"
        supervisor.tick()
        time.sleep(0.05)


def test_a_child_that_dies_is_started_again_and_the_restart_is_logged() -> None:
    sleeper = ChildSpec(name="sleeper", command=[sys.executable, "-c", "import time; time.sleep(60)"])
    supervisor, messages = _supervise([sleeper])
    for child in supervisor.children:
        supervisor._start(child)
    child = supervisor.children[0]
    first = child.process
    try:
        first.send_signal(signal.SIGKILL)
        _tick_until(supervisor, lambda: child.process is not first and child.process.poll() is None)
        assert child.restarts and "sleeper (pid" in messages[0] and "signal SIGKILL" in messages[0]
        assert "starting it again in 1 s (restart 1)" in messages[0]
    finally:
        supervisor.stop()
    assert child.process.poll() is not None, "stop() ends every child"


@pytest.mark.slow
def test_a_child_that_keeps_crashing_is_restarted_with_growing_waits_and_never_stops_the_others() -> None:
    crasher = ChildSpec(name="crasher", command=[sys.executable, "-c", "raise SystemExit(3)"])
    sleeper = ChildSpec(name="sleeper", command=[sys.executable, "-c", "import time; time.sleep(60)"])
    supervisor, messages = _supervise([crasher, sleeper])
    supervisor.children[0].backoff = Backoff(maximum=2)
    for child in supervisor.children:
        supervisor._start(child)
    try:
        _tick_until(supervisor, lambda: len(supervisor.children[0].restarts) >= 3)
        assert all("status 3" in message for message in messages)
        assert [re.search(r"starting it again in (\d+) s", m).group(1) for m in messages[:3]] == ["1", "2", "2"]
        assert supervisor.children[1].process.poll() is None and not supervisor.children[1].restarts
    finally:
        supervisor.stop()


def test_stop_sends_each_child_its_own_signal_and_kills_what_does_not_stop(tmp_path) -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open({!r}, 'w').close(); time.sleep(60)"
    marker = tmp_path / "ready"
    specs = [
        ChildSpec(name="polite", command=[sys.executable, "-c", "import time; time.sleep(60)"], stop_signal=signal.SIGINT),
        ChildSpec(name="stubborn", command=[sys.executable, "-c", stubborn.format(str(marker))]),
    ]
    supervisor, messages = _supervise(specs)
    supervisor.stop_timeout = 1
    for child in supervisor.children:
        supervisor._start(child)
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    supervisor.stop()
    polite, stubborn_child = (child.process for child in supervisor.children)
    assert polite.returncode == -signal.SIGINT
    assert stubborn_child.returncode == -signal.SIGKILL and any("stubborn did not stop" in m for m in messages)


def test_a_child_runs_at_the_lower_cpu_priority_its_spec_asks_for() -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    supervisor, _ = _supervise([ChildSpec(name="job worker", command=sleeper, nice=5), ChildSpec(name="web", command=sleeper)])
    for child in supervisor.children:
        supervisor._start(child)
    try:
        worker, web = (psutil.Process(child.process.pid) for child in supervisor.children)
        assert (worker.nice(), web.nice()) == (os.nice(0) + 5, os.nice(0))
    finally:
        supervisor.stop()


def test_runapp_runs_its_job_workers_below_the_web_server_and_gunicorn_with_the_apps_config(monkeypatch) -> None:
    monkeypatch.delenv("DEV_SERVER", raising=False)
    monkeypatch.delenv("WORKER_NICE", raising=False)
    monkeypatch.setenv("WORKER_PROCESSES", "2")
    *workers, web = child_specs("127.0.0.1:8000")
    assert [spec.nice for spec in workers] == [10, 10] and web.nice == 0
    assert web.command[web.command.index("--config") + 1] == "python:webapp.gunicorn_conf"
    monkeypatch.setenv("WORKER_NICE", "20")
    with pytest.raises(CommandError, match="WORKER_NICE=20"):
        child_specs("127.0.0.1:8000")


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (ConnectionError, urllib.error.URLError, TimeoutError):
        return None


def _workers_of(runapp: subprocess.Popen) -> list[psutil.Process]:
    """runapp's live worker processes (a killed one is a zombie until runapp notices it)."""
    workers = []
    for child in psutil.Process(runapp.pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "procrastinate" in " ".join(child.cmdline()):
                workers.append(child)
        except psutil.Error:  # gone meanwhile
            continue
    return workers


def _wait(what: str, condition, runapp: subprocess.Popen, timeout: float) -> float:
    started = time.monotonic()
    while not condition():
        assert runapp.poll() is None, f"runapp exited while waiting for {what}"
        assert time.monotonic() - started < timeout, f"gave up waiting {timeout} s for {what}"
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.mark.django_db(transaction=True)  # the test's own embedded database is not runapp's; nothing of it is used
@process_level
def test_a_killed_worker_of_runapp_is_back_within_10_s_and_the_site_answers_throughout(tmp_path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EMBEDDED_DB_DELETE_ON_EXIT", "DEBUG", "DEV_SERVER"}}
    env.update(STATE_DIR=str(tmp_path), WEB_CONCURRENCY="2", WORKER_PROCESSES="1", LOG_LEVEL="WARNING")
    log = open(tmp_path / "runapp.log", "w+")  # noqa: SIM115 - runapp writes to it until the end of the test
    runapp = subprocess.Popen(
        [sys.executable, "manage.py", "runapp", "--no-demo", f"127.0.0.1:{port}"], cwd=REPO_ROOT, env=env, stdout=log, stderr=log
    )
    site = f"http://127.0.0.1:{port}"
    answers: list[int | None] = []
    polling = threading.Event()

    def poll_the_site() -> None:
        while not polling.is_set():
            answers.append(_status(f"{site}/accounts/login/"))
            time.sleep(0.2)

    poller = threading.Thread(target=poll_the_site)
    try:
        _wait("the site", lambda: _status(f"{site}/readyz") == 200, runapp, timeout=300)  # up, and a worker beats
        [worker] = _workers_of(runapp)
        poller.start()
        time.sleep(1)
        worker.send_signal(signal.SIGKILL)
        back = _wait("a new worker", lambda: [w.pid for w in _workers_of(runapp)] not in ([], [worker.pid]), runapp, timeout=10)
        _wait("the new worker's heartbeat", lambda: _status(f"{site}/healthz") == 200 and _status(f"{site}/readyz") == 200, runapp, 60)
        time.sleep(1)
    finally:
        polling.set()
        if poller.is_alive():
            poller.join()
        runapp.send_signal(signal.SIGINT)
        runapp.wait(timeout=90)
        log.seek(0)
        output = log.read()
    assert back <= 10
    assert answers and set(answers) == {200}, f"the site did not answer every time: {answers}"
    assert "worker 1 (pid" in output and "signal SIGKILL" in output and "starting it again" in output, output[-3000:]
    assert runapp.returncode == 0, output[-3000:]


def _gunicorn_master_of(runapp: subprocess.Popen) -> psutil.Process | None:
    for child in psutil.Process(runapp.pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "gunicorn" in " ".join(child.cmdline()):
                return child
        except psutil.Error:  # gone meanwhile
            continue
    return None


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@process_level
def test_a_killed_gunicorn_master_leaves_no_worker_holding_the_port_and_the_site_is_back_within_10_s(tmp_path) -> None:
    """Process level: it asserts how soon the site answers again after ``kill -9`` of runapp's gunicorn master.

    Before, the master's workers stayed (orphans still holding the listening socket) until they next woke up, up to
    60 s when no request came; the new master could not bind meanwhile. No request is sent until they are gone: one
    would wake an orphan, which would serve it and only then notice its master is dead.
    """
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EMBEDDED_DB_DELETE_ON_EXIT", "DEBUG", "DEV_SERVER"}}
    env.update(STATE_DIR=str(tmp_path), WEB_CONCURRENCY="2", WORKER_PROCESSES="1", LOG_LEVEL="WARNING")
    log = open(tmp_path / "runapp.log", "w+")  # noqa: SIM115 - runapp writes to it until the end of the test
    runapp = subprocess.Popen(
        [sys.executable, "manage.py", "runapp", "--no-demo", f"127.0.0.1:{port}"], cwd=REPO_ROOT, env=env, stdout=log, stderr=log
    )
    login = f"http://127.0.0.1:{port}/accounts/login/"
    try:
        _wait("the site", lambda: _status(login) == 200, runapp, timeout=300)
        master = _gunicorn_master_of(runapp)
        # gunicorn forks its workers one after the other: under load the first answers before the second exists
        _wait("both gunicorn workers", lambda: len(master.children()) == 2, runapp, timeout=60)
        workers = master.children()
        master.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        _wait("the killed master's workers to exit", lambda: not any(_alive(w) for w in workers), runapp, timeout=10)
        _wait("a page from a new gunicorn", lambda: _status(login) == 200, runapp, timeout=10)
        back = time.monotonic() - killed_at
        new_master = _gunicorn_master_of(runapp)
    finally:
        runapp.send_signal(signal.SIGINT)
        runapp.wait(timeout=90)
        log.seek(0)
        output = log.read()
    assert back <= 10, f"the site answered {back:.1f} s after the master was killed"
    assert new_master is not None and new_master.pid != master.pid
    assert f"(pid {master.pid}) exited with signal SIGKILL" in output, output[-3000:]
    assert runapp.returncode == 0, output[-3000:]
