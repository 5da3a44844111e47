"""The embedded PostgreSQL: one server per state directory, shared by processes, stopped by the last one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

ATTACH = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import psycopg
    from webapp.lib.embedded_db import embedded_database_start

    database = embedded_database_start(state_dir=Path(sys.argv[1]))
    with psycopg.connect(dbname=database.name, user=database.user, host=str(database.socket_dir), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS marker (note text)")
        conn.execute("INSERT INTO marker VALUES (%s)", [sys.argv[2]])
        postmaster = conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]
        count = conn.execute("SELECT count(*) FROM marker").fetchone()[0]
    print(database.pgdata, postmaster.isoformat(), count, flush=True)
    time.sleep(float(sys.argv[3]))
    """
)


def _attach(state_dir: Path, note: str, hold_seconds: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", ATTACH, str(state_dir), note, str(hold_seconds)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _postmasters(pgdata: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(attrs=["name", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if process.info["name"] == "postgres" and str(pgdata) in " ".join(cmdline):
            found.append(process)
    return found


@pytest.mark.slow
def test_two_starts_share_one_server_and_the_last_exit_stops_it(tmp_path):
    first = _attach(tmp_path, "first", 3)
    first_line = first.stdout.readline()  # the first app is up and holds the server
    second = _attach(tmp_path, "second", 0.5)
    out_second, err_second = second.communicate(timeout=120)
    assert second.returncode == 0, err_second
    pgdata = tmp_path / "postgres"
    assert len(_postmasters(pgdata)) == 1, "the second start must attach, not start another postmaster"
    _, err_first = first.communicate(timeout=120)
    assert first.returncode == 0, err_first
    # Both processes saw the same server (same start time).
    assert first_line.split()[1] == out_second.split()[1]

    deadline = time.monotonic() + 30
    while _postmasters(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _postmasters(pgdata) == [], "the server must stop when the last process using it exits"
    assert not (pgdata / "postmaster.pid").exists(), "a clean shutdown removes postmaster.pid"

    third = _attach(tmp_path, "third", 0)
    out_third, err_third = third.communicate(timeout=120)
    assert third.returncode == 0, err_third
    assert out_third.split()[2] == "3", "data written before the restart must still be there"


@pytest.mark.slow
def test_a_killed_process_does_not_keep_the_server_running(tmp_path):
    killed = _attach(tmp_path, "killed", 60)
    killed.stdout.readline()  # attached
    killed.kill()  # SIGKILL: no exit hook runs, its pid stays in pgserver's handle list
    killed.wait(timeout=10)
    pgdata = tmp_path / "postgres"
    assert len(_postmasters(pgdata)) == 1

    last = _attach(tmp_path, "last", 0)
    _, err = last.communicate(timeout=120)
    assert last.returncode == 0, err
    deadline = time.monotonic() + 30
    while _postmasters(pgdata) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _postmasters(pgdata) == [], "the last live process must stop the server despite the dead one"
