"""Keep a set of child processes running, as a process supervisor does (``manage.py runapp``).

A child that exits when nobody asked it to (a worker killed for memory, a crashed web server)
is started again after a wait that doubles from 1 s to ``max_wait`` (back to 1 s once it ran
a minute), and each restart is logged with the child's exit status. Only SIGINT (Ctrl-C) or
SIGTERM to the supervisor stops everything: each child gets its own stop signal once (children
run in their own process group, so a terminal's Ctrl-C reaches them through the supervisor only,
never twice), then up to ``stop_timeout`` seconds before it is killed. On Linux a child also
gets SIGTERM if the supervisor itself dies, so nothing is left running unsupervised (gunicorn's
workers do the same with their master: :mod:`webapp.gunicorn_conf`). A child may run at a lower
CPU priority (``ChildSpec.nice``): runapp's job workers do, so that pages win the CPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from alignment.jobs.backoff import Backoff

POLL_SECONDS = 0.2
_PR_SET_PDEATHSIG = 1


@dataclass
class ChildSpec:
    """One supervised process: its name in the log, its command line, environment, graceful-stop signal and niceness."""

    name: str
    command: list[str]
    env: dict[str, str] | None = None
    stop_signal: int = signal.SIGTERM
    nice: int = 0  # added to the supervisor's niceness (os.nice): higher runs only when the others leave CPU over


@dataclass
class _Child:
    spec: ChildSpec
    backoff: Backoff
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    restarts: list[float] = field(default_factory=list)


def die_with_parent(signum: int) -> None:
    """Have Linux send this process ``signum`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere nothing.

    Strictly, when the parent *thread* that forked this process exits: call it in children of a parent that forks
    from its main thread (the supervisor, gunicorn's master). A parent that died before the call sends nothing: the
    caller compares ``os.getppid()`` with the parent it expects afterwards.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signum)


def _child_setup(nice: int) -> None:
    """In the child before exec: default Ctrl-C handling, its CPU priority, and SIGTERM when the supervisor dies (Linux)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell starting us in the background made SIGINT ignored
    if nice:
        os.nice(nice)
    die_with_parent(signal.SIGTERM)


class Supervisor:
    """Start ``specs``, keep them running until :meth:`stop` (or SIGINT/SIGTERM under :meth:`run`)."""

    def __init__(self, specs: list[ChildSpec], *, log: Callable[[str], None], max_wait: float = 30.0, stop_timeout: float = 20.0):
        self.children = [_Child(spec=spec, backoff=Backoff(max_wait)) for spec in specs]
        self.log = log
        self.stop_timeout = stop_timeout
        self.stopping = False

    def run(self) -> None:
        """Supervise until a stop signal, then stop every child. Installs SIGINT and SIGTERM handlers."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: self.request_stop())
        for child in self.children:
            self._start(child)
        try:
            while not self.stopping:
                self.tick()
                time.sleep(POLL_SECONDS)
        finally:
            self.stop()

    def request_stop(self) -> None:
        self.stopping = True

    def tick(self) -> None:
        """One round: notice children that exited, start again those whose wait is over."""
        now = time.monotonic()
        for child in self.children:
            process = child.process
            if process is not None and process.poll() is not None and child.restart_at is None:
                wait = child.backoff.after_run(now - child.started_at)
                child.restart_at = now + wait
                self.log(
                    f"{child.spec.name} (pid {process.pid}) exited with {_status(process.returncode)} after "
                    f"{now - child.started_at:.0f} s; starting it again in {wait:.0f} s (restart {child.backoff.restarts})"
                )
            if child.restart_at is not None and now >= child.restart_at and not self.stopping:
                self._start(child)
                child.restarts.append(now)

    def _start(self, child: _Child) -> None:
        setup = functools.partial(_child_setup, child.spec.nice)
        child.process = subprocess.Popen(child.spec.command, env=child.spec.env, preexec_fn=setup, process_group=0)
        child.started_at = time.monotonic()
        child.restart_at = None

    def stop(self) -> None:
        """Each running child gets its stop signal once; whatever is left after ``stop_timeout`` seconds is killed."""
        self.stopping = True
        running = [c.process for c in self.children if c.process is not None and c.process.poll() is None]
        for child in self.children:
            if child.process is not None and child.process.poll() is None:
                child.process.send_signal(child.spec.stop_signal)
        deadline = time.monotonic() + self.stop_timeout
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                name = next(c.spec.name for c in self.children if c.process is process)
                self.log(f"{name} did not stop within {self.stop_timeout:.0f} s; killing it")
                process.kill()
                process.wait()


def _status(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-returncode).name}"
        return f"signal {-returncode}"
    return f"status {returncode}"
