"""``manage.py runapp``: set up the demo, then run Procrastinate workers and the web server, supervised.

The web server is gunicorn (several processes, see :func:`web_workers`; its master loads the
app once and forks them, webapp/gunicorn_conf.py); ``DEV_SERVER=1`` runs Django's autoreloading
development server instead. WORKER_PROCESSES workers (2) take every queue, at a lower CPU
priority than the web server (:func:`worker_nice`). Every child attaches to the same database
(the gunicorn master for its workers, which are copies of it); a child that dies is started
again with backoff (:mod:`webapp.lib.supervisor`), so a worker killed for memory never takes
the site down; Ctrl-C (or SIGTERM) stops all of them, and when the last process holding the
embedded PostgreSQL exits, it shuts down cleanly.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.lib.env import envbool, envint
from webapp.lib.supervisor import ChildSpec, Supervisor

# 2 x cores + 1 (gunicorn's rule of thumb for sync workers), but each worker holds Django and a
# database connection: past this many, a small team gains nothing and the database pays.
MAX_DEFAULT_WORKERS = 12


def web_workers() -> int:
    """WEB_CONCURRENCY, else 2 x the cores this process may use + 1, capped."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = envint("WEB_CONCURRENCY", min(2 * cores + 1, MAX_DEFAULT_WORKERS))
    if workers < 1:
        raise CommandError(f"WEB_CONCURRENCY={workers}: the web server needs at least 1 worker process.")
    return workers


def gunicorn_env() -> dict[str, str]:
    """gunicorn's workers are long-lived processes: each keeps its database connection (DB_CONN_MAX_AGE, unless set)."""
    return {"DB_CONN_MAX_AGE": "60", **os.environ}


def gunicorn_command(bind: str) -> list[str]:
    """The production web server: gunicorn's prefork workers on the WSGI app, logs to stderr.

    webapp/gunicorn_conf.py loads the app once in the master before forking (preload) and has each
    worker die with its master, so a killed master leaves nothing holding the port.
    """
    threads = envint("WEB_THREADS", 1)
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:webapp.gunicorn_conf",
        "webapp.wsgi:application",
        "--bind",
        bind,
        "--workers",
        str(web_workers()),
        "--threads",
        str(max(1, threads)),
        "--timeout",
        str(envint("WEB_TIMEOUT", 120)),  # a large corpus upload is parsed in the request
        "--graceful-timeout",
        "15",  # runapp waits 20 s before killing
        *(["--access-logfile", "-"] if envbool("WEB_ACCESS_LOG", False) else []),  # none by default: it costs every request
        "--error-logfile",
        "-",
        "--no-control-socket",  # one fixed socket path per user: a second server (tests, a bench) would clash
    ]


def _bind(addrport: str) -> str:
    return f"127.0.0.1:{addrport}" if addrport.isdigit() else addrport


class Command(BaseCommand):
    help = "Run the whole app: demo data, background workers and web server (gunicorn; DEV_SERVER=1: runserver), supervised."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo accounts and corpus.")

    def handle(self, *args, **options) -> None:
        if options["no_demo"]:
            call_command("migrate", interactive=False, verbosity=0)
        else:
            call_command("setup_demo")
        # Before serving: gunicorn's workers read the hashed names from the manifest this writes.
        call_command("collectstatic", interactive=False, verbosity=0)
        bind = _bind(options["addrport"])
        specs = child_specs(bind)
        workers = sum(spec.name.startswith("worker") for spec in specs)
        self.stdout.write(
            self.style.SUCCESS(
                f"Web app on http://{bind}/ ({specs[-1].name}) and {workers} worker{'s' if workers != 1 else ''} are running, "
                "each started again if it stops. Ctrl-C stops all of them."
            )
        )
        supervisor = Supervisor(specs, log=self._log, max_wait=envint("SUPERVISOR_MAX_WAIT_SECONDS", 30))
        supervisor.run()

    def _log(self, message: str) -> None:
        self.stderr.write(f"[runapp {time.strftime('%Y-%m-%d %H:%M:%S')}] {message}")


def worker_processes() -> int:
    """WORKER_PROCESSES (default 2: one user's long import never leaves the others without a worker)."""
    count = envint("WORKER_PROCESSES", 2)
    if count < 1:
        raise CommandError(f"WORKER_PROCESSES={count}: the app needs at least 1 worker process.")
    return count


def worker_nice() -> int:
    """WORKER_NICE (default 10): how much lower the workers' CPU priority is than the web server's.

    Web and workers share this machine's cores: an embedding or alignment job keeps every core busy for minutes,
    and at equal priority pages queue behind the encoder's threads. At niceness 10 a worker gets about a tenth of
    a core that a web process also wants, and all of what the web tier leaves idle (docs/deploying.md has the figures).
    """
    nice = envint("WORKER_NICE", 10)
    if not 0 <= nice <= 19:
        raise CommandError(f"WORKER_NICE={nice}: choose 0 (the web server's priority) to 19 (the lowest).")
    return nice


def child_specs(bind: str) -> list[ChildSpec]:
    """The supervised children: WORKER_PROCESSES workers on every queue, then the web server (gunicorn or runserver).

    Workers stop gracefully on SIGTERM (jobs in flight finish), gunicorn too (requests in flight finish),
    runserver on SIGINT; all run their exit hooks, which detach them from the embedded database.
    """
    manage = [sys.executable, "manage.py"]
    nice = worker_nice()
    specs = [
        ChildSpec(name=f"worker {n}", command=[*manage, "procrastinate", "worker", "--name", f"runapp-worker-{n}"], nice=nice)
        for n in range(1, worker_processes() + 1)
    ]
    if envbool("DEV_SERVER", False):
        specs.append(ChildSpec(name="the development server (autoreload)", command=[*manage, "runserver", bind], stop_signal=signal.SIGINT))
    else:
        command = gunicorn_command(bind)
        specs.append(ChildSpec(name=f"gunicorn ({command[command.index('--workers') + 1]} workers)", command=command, env=gunicorn_env()))
    return specs
