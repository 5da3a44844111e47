"""Shared start-up for bench scripts: Django on a throw-away embedded database (unless DATABASE_URL is set)."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def setup_django(*, keep: str = "") -> None:
    """Django on a throw-away embedded database; with ``keep`` (a folder), on one kept there after the run (stopped,
    not deleted), so that a bench's database can be looked into: ``STATE_DIR=<keep> .venv/bin/python manage.py ...``."""
    sys.path.insert(0, str(REPO_ROOT))
    os.chdir(REPO_ROOT)
    if not os.environ.get("DATABASE_URL"):
        os.environ["STATE_DIR"] = str(Path(keep).resolve()) if keep else tempfile.mkdtemp(prefix="aligner-bench-")
        os.environ["EMBEDDED_DB_DELETE_ON_EXIT"] = "0" if keep else "1"
        if not keep:  # registered before the database starts, so it runs after the database's own clean-up at exit
            atexit.register(shutil.rmtree, os.environ["STATE_DIR"], ignore_errors=True)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def require_shared(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        sys.exit(f"{path} is missing: this benchmark needs ../shared/data/{name} beside the checkout.")
    return path


def bench_owner():
    from django.contrib.auth import get_user_model

    owner, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_superuser": True, "is_staff": True})
    return owner


def database_url() -> str:
    """DATABASE_URL of the database this process uses, for worker and server subprocesses."""
    from django.db import connection

    params = connection.settings_dict
    host = quote(str(params["HOST"]), safe="") if str(params["HOST"]).startswith("/") else params["HOST"]
    port = f":{params['PORT']}" if params.get("PORT") else ""
    password = f":{quote(params['PASSWORD'])}" if params.get("PASSWORD") else ""
    return f"postgresql://{params['USER']}{password}@{host}{port}/{params['NAME']}"


def settle(tables: list[str] | None = None) -> None:
    """PostgreSQL's background work on the rows just written or deleted done now, outside a bench's clock, rather than by
    autovacuum during the next timed run on the same cores: ``VACUUM (ANALYZE)`` of ``tables`` (None: the whole
    database), then a ``CHECKPOINT`` where the role may."""
    import contextlib

    from django.db import DatabaseError, connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)" + (" " + ", ".join(tables) if tables else ""))
        with contextlib.suppress(DatabaseError):  # a DATABASE_URL whose role may not (pg_checkpoint): the vacuum is most of it
            cursor.execute("CHECKPOINT")


def postgres_cpu_seconds() -> float | None:
    """CPU seconds PostgreSQL's processes on this machine have used so far: the server's own, its live backends' and
    those of the backends it has reaped (the postmaster's children's times), read from ``/proc``. Take it before and
    after a job: the difference is the database's work for it, backends that came and went included. None where it
    cannot be read (not Linux, or no server here: a DATABASE_URL on another host)."""
    tick, total, found = os.sysconf("SC_CLK_TCK"), 0, False
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")[0]
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if command.endswith(b"/postgres") or command == b"postgres":  # the postmaster (by its path)
            total += sum(int(value) for value in fields[11:15])  # its user and system time, and its reaped children's
            found = True
        elif command.startswith(b"postgres:"):  # a backend or a background process (its title)
            total += int(fields[11]) + int(fields[12])
    return total / tick if found else None


def cpu_times() -> tuple[int, int] | None:
    """(steal, total) clock ticks of all CPUs so far, from ``/proc/stat``; None where it cannot be read. Steal is the
    time the hypervisor gave this VM's virtual CPUs to others while they had work: take it before and after a timed
    stretch, and :func:`steal_share` says what share of the CPU time it was."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal (guest is inside user)
    return (ticks[7], sum(ticks)) if len(ticks) == 8 else None


def steal_share(before: tuple[int, int] | None) -> float | None:
    """The share (0-1) of every CPU's time since ``before`` (:func:`cpu_times`) that the hypervisor took, or None where
    it cannot be read: printed beside a timed round, so that a slow round can be told from a machine whose neighbours
    took its CPUs (on this project's shared VMs the pace moves within minutes; where it is 0, steal is not why)."""
    after = cpu_times()
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])
