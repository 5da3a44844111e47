"""gunicorn's settings for the app: ``gunicorn -c python:webapp.gunicorn_conf webapp.wsgi:application`` (runapp passes it).

The command line (runapp, or yours) says where to listen and how many workers; this file says how they live:

* **preload_app**: the master loads Django, the settings (attaching to the embedded database) and the URLconf once,
  and only then listens and forks its workers. A worker is a copy of a loaded process, so it answers its first page
  at once: a (re)started gunicorn answers in the time one process takes to load (3–4 s on 2 idle cores) instead of
  WEB_CONCURRENCY processes loading side by side on the same cores while requests wait, as each worker used to.
* **post_fork**, **worker_exit**: a worker dies with its master. A worker whose master was SIGKILLed (OOM,
  ``kill -9``) used to stay, still holding the listening socket, until it next woke up (up to WEB_TIMEOUT / 2 = 60 s
  when idle); the next master could not bind the port meanwhile and runapp's restarts backed off. Now the kernel
  sends it SIGTERM: an idle worker exits at once, a busy one after its request, and without Python's exit hooks and
  clean-up (1.3–2.5 s a worker on a loaded 2-core machine, taken from the new master loading the app; now 0.1 s).
"""

from __future__ import annotations

import os
import signal
import sys

from webapp.lib.supervisor import die_with_parent

preload_app = True


def pre_fork(server, worker) -> None:
    """In the master, before each fork: no database connection of the master's may be shared with a worker."""
    from django.db import connections

    connections.close_all()


def post_fork(server, worker) -> None:
    """In the new worker: SIGTERM when the master dies; and if it died already, before that was asked for, exit now."""
    die_with_parent(signal.SIGTERM)
    if os.getppid() != server.pid:
        sys.exit(0)


def worker_exit(server, worker) -> None:
    """In a worker that is exiting: when its master is gone, end now, leaving nothing for Python's exit hooks to do.

    A worker is a fork of the master (preload), so it never attached to the embedded database itself: the exit hooks
    it inherited (detaching, forgetting dead processes) have nothing of its own to undo. Its database connection is
    closed here. A worker whose master lives exits the usual way, with the status the master reads.
    """
    if os.getppid() == server.pid:
        return
    from django.db import connections

    connections.close_all()
    sys.stderr.flush()
    os._exit(0)
