"""``manage.py runapp``: set up the demo, then run a Procrastinate worker and the web server together.

Both children attach to the same database. Ctrl-C (or SIGTERM) stops both;
when the last process holding the embedded PostgreSQL exits, it shuts down
cleanly.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the whole app: demo data, background worker and web server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo accounts and corpus.")

    def handle(self, *args, **options) -> None:
        if options["no_demo"]:
            call_command("migrate", interactive=False, verbosity=0)
        else:
            call_command("setup_demo")
        manage = [sys.executable, "manage.py"]
        children = [
            subprocess.Popen([*manage, "procrastinate", "worker"], preexec_fn=_default_sigint),
            subprocess.Popen([*manage, "runserver", options["addrport"], "--noreload"], preexec_fn=_default_sigint),
        ]
        self.stdout.write(self.style.SUCCESS(f"Web app on http://{options['addrport']}/ and a worker are running. Ctrl-C stops both."))

        def stop(signum, frame) -> None:
            # SIGINT, not SIGTERM: both children shut down gracefully on it (and run
            # their exit hooks, which detach them from the embedded database).
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGINT)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while all(child.poll() is None for child in children):
                try:
                    children[0].wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            stop(None, None)
            for child in children:
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.stderr.write(f"{' '.join(child.args[2:4])} did not stop within 20 s of Ctrl-C; killing it")
                    child.kill()
                    child.wait()
        failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGKILL)]
        if failed:
            raise SystemExit(f"{' '.join(failed[0].args[2:4])} exited with status {failed[0].returncode}")


def _default_sigint() -> None:
    """Children take Ctrl-C even when runapp itself was started in the background (where the shell
    makes SIGINT ignored, which children would inherit and runserver would never stop)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
