"""One long SQL statement stopped within seconds of a cancel, from a helper thread on a connection of its own.

A job checks its cancel between steps; one statement (pgvector's ``CREATE INDEX`` over a million vectors) is a
step of minutes. :func:`statement_stopped_when` runs the block's statements on this thread's connection while a
helper thread asks ``requested()`` every ``every`` seconds and, once it answers True, sends PostgreSQL a cancel
request for the statement in flight (psycopg's ``Connection.cancel``); the block then raises ``stopped()`` instead
of the database's error. Outside a transaction a cancelled statement aborts only itself; inside one, the whole
transaction. Used by a mining job's prepare (``alignment.mining.cancelling``) and the embedding run's index build.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection, connections


@contextmanager
def statement_stopped_when(requested: Callable[[], bool], stopped: Callable[[], BaseException], *, every: float = 1.0) -> Iterator[None]:
    """Run the block's statements under a helper thread that cancels the one in flight once ``requested()``."""
    connection.ensure_connection()
    raw, done, fired = connection.connection, threading.Event(), threading.Event()

    def watch() -> None:
        try:
            while not done.wait(max(every, 0.05)):
                if requested():
                    fired.set()
                    raw.cancel()  # PostgreSQL stops the statement in flight, if any
                    return
        finally:
            connections.close_all()  # this thread's own connection

    watcher = threading.Thread(target=watch, name="statement-cancel", daemon=True)
    watcher.start()
    try:
        yield
    except DatabaseError as error:
        if fired.is_set():
            raise stopped() from error
        raise
    finally:
        done.set()
        watcher.join()
