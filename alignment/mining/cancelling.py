"""A mining job's prepare stops within seconds of a cancel, between batches and between chunks of an index build.

The shards check the job's ``cancel_requested`` between batches (``service.mining_shard_execute``); the prepare ran
to its end whatever the user asked (at a million sequences, minutes of encoding and an index build). It now calls a
:class:`CancelCheck` after every batch it stores, every document it reads for the lexical IDF or document vectors,
and every chunk of vectors the faiss index takes (``models_ml.mining.vector_index.ADD_CHUNK``); once the cancel is
asked for, the check raises :class:`PrepareCancelled` and ``mining_job_prepare`` marks the job cancelled. Everything
stored so far stays: a job queued again resumes its prepare after the last stored batch.
"""

from __future__ import annotations

import time

from alignment.mining.models import MiningJob

CHECK_EVERY = 1.0  # seconds between two reads of the flag (a check after every batch of a fast prepare would cost a query each)


class PrepareCancelled(Exception):
    """The job's cancel was asked for while its prepare ran."""


class CancelCheck:
    """Called between steps: raises :class:`PrepareCancelled` once the job's cancel is asked for (the flag is read at
    most every :data:`CHECK_EVERY` seconds, the first call always), and beats the job's heartbeat meanwhile."""

    def __init__(self, job: MiningJob) -> None:
        self.job = job
        self._checked_at = -float("inf")

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._checked_at < CHECK_EVERY:
            return
        self._checked_at = now
        if MiningJob.objects.filter(pk=self.job.pk, cancel_requested=True).exists():
            raise PrepareCancelled(f"mining job {self.job.pk} was cancelled during its prepare")
        self.job.heartbeat()
