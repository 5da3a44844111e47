"""A mining job's prepare stops within seconds of a cancel: between batches, chunks of an index build, and inside
the one long statement it runs (pgvector's CREATE INDEX over the job's vectors).

The shards check the job's ``cancel_requested`` between batches (``service.mining_shard_execute``); the prepare ran
to its end whatever the user asked (at a million sequences, minutes of encoding and an index build). It now calls a
:class:`CancelCheck` after every batch it stores, every document it reads for the lexical IDF or document vectors,
and every chunk of vectors the faiss index takes (``models_ml.mining.vector_index.ADD_CHUNK``), and runs its
``CREATE INDEX`` statements under :meth:`CancelCheck.statement`, whose helper thread asks PostgreSQL to cancel the
statement once the flag is set. Once the cancel is asked for, the check raises :class:`PrepareCancelled` and
``mining_job_prepare`` marks the job cancelled. Everything stored so far stays: a job queued again resumes its
prepare after the last stored batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from alignment.jobs.statements import statement_stopped_when
from alignment.mining.models import MiningJob

CHECK_EVERY = 1.0  # seconds between two reads of the flag (a check after every batch of a fast prepare would cost a query each)


class PrepareCancelled(Exception):
    """The job's cancel was asked for while its prepare ran (or while an LHA shard's worker built the job's document
    index, :mod:`alignment.mining.lha_search`)."""


class CancelCheck:
    """Called between steps: raises :class:`PrepareCancelled` once the job's cancel is asked for (the flag is read at
    most every :data:`CHECK_EVERY` seconds by each thread that calls it, its first call always), and beats the job's
    heartbeat meanwhile. ``CancelCheck(None)`` (:data:`NEVER`) never raises: for callers that are not a job's prepare."""

    def __init__(self, job: MiningJob | None) -> None:
        self.job = job
        self._checked_at: dict[int, float] = {}  # per thread: a prepare's two corpora are stored on two at once

    def _requested(self) -> bool:
        return self.job is not None and MiningJob.objects.filter(pk=self.job.pk, cancel_requested=True).exists()

    def __call__(self) -> None:
        now, thread = time.monotonic(), threading.get_ident()
        if self.job is None or now - self._checked_at.get(thread, -float("inf")) < CHECK_EVERY:
            return
        self._checked_at[thread] = now
        if self._requested():
            raise self._cancelled()
        self.job.heartbeat()

    def _cancelled(self) -> PrepareCancelled:
        return PrepareCancelled(f"mining job {self.job.pk} was cancelled during its prepare")

    @contextmanager
    def statement(self) -> Iterator[None]:
        """Run the block's statements (on this thread's connection) under a helper thread that reads the flag every
        :data:`CHECK_EVERY` seconds on a connection of its own and, once it is set, cancels the statement running;
        the block then raises :class:`PrepareCancelled`. Outside a transaction: a cancelled statement aborts one."""
        if self.job is None:
            yield
            return
        with statement_stopped_when(self._requested, self._cancelled, every=CHECK_EVERY):
            yield
        self()  # the flag may have been set as the statement ended: stop here, not at the next batch


NEVER = CancelCheck(None)
