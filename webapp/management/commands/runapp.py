"""``manage.py runapp``: set up the demo, then run a Procrastinate worker and the web server together.

The web server is gunicorn (several processes, see :func:`web_workers`); ``DEV_SERVER=1``
runs Django's autoreloading development server instead. Every child attaches to the
same database (each gunicorn worker loads the settings itself, so each attaches to the
embedded PostgreSQL and detaches when it exits). Ctrl-C (or SIGTERM) stops all of
them; when the last process holding the embedded PostgreSQL exits, it shuts down
cleanly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.lib.env import envbool, envint

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
    """The production web server: gunicorn's prefork workers on the WSGI app, logs to stderr."""
    threads = envint("WEB_THREADS", 1)
    return [
        sys.executable,
        "-m",
        "gunicorn",
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
    help = "Run the whole app: demo data, background worker and web server (gunicorn; DEV_SERVER=1: runserver)."

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
        manage = [sys.executable, "manage.py"]
        dev_server = envbool("DEV_SERVER", False)
        web = [*manage, "runserver", bind] if dev_server else gunicorn_command(bind)
        children = [
            subprocess.Popen([*manage, "procrastinate", "worker"], preexec_fn=_default_sigint),
            subprocess.Popen(web, preexec_fn=_default_sigint, env=os.environ if dev_server else gunicorn_env()),
        ]
        # The worker stops gracefully on SIGINT; gunicorn on SIGTERM (lets requests in flight finish);
        # both run their exit hooks, which detach them from the embedded database.
        stop_signals = [signal.SIGINT, signal.SIGINT if dev_server else signal.SIGTERM]
        server = "the development server (autoreload)" if dev_server else f"gunicorn ({web[web.index('--workers') + 1]} workers)"
        self.stdout.write(self.style.SUCCESS(f"Web app on http://{bind}/ ({server}) and a worker are running. Ctrl-C stops both."))

        def stop(signum, frame) -> None:
            for child, stop_signal in zip(children, stop_signals):
                if child.poll() is None:
                    child.send_signal(stop_signal)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while all(child.poll() is None for child in children):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    children[0].wait(timeout=1)
        finally:
            stop(None, None)
            for child in children:
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.stderr.write(f"{_name(child)} did not stop within 20 s of Ctrl-C; killing it")
                    child.kill()
                    child.wait()
        failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGKILL)]
        if failed:
            raise SystemExit(f"{_name(failed[0])} exited with status {failed[0].returncode}")


def _name(child: subprocess.Popen) -> str:
    return "gunicorn" if "gunicorn" in child.args else " ".join(child.args[2:4])


def _default_sigint() -> None:
    """Children take Ctrl-C even when runapp itself was started in the background (where the shell
    makes SIGINT ignored, which children would inherit and runserver would never stop)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
