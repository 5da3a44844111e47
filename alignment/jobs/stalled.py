"""The stalled-job sweep: requeue the jobs of workers that stopped sending heartbeats (killed, crashed, lost).

A periodic task (``alignment.retry_stalled_jobs``, every minute) runs it; a worker that lost the
database and started again leaves its old worker id behind, whose jobs are swept up the same way.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

STALLED_AFTER_SECONDS = 60


async def stalled_jobs_retry_async(app, *, seconds_since_heartbeat: float = STALLED_AFTER_SECONDS) -> int:
    """Put back to the queue every job whose worker stopped sending heartbeats (killed, crashed, lost).

    Safe because our tasks are idempotent: the requeued task finds its row still "running" and
    :meth:`alignment.jobs.models.Job.pickup` resumes it, restarts it cleanly or, after JOB_MAX_ATTEMPTS,
    fails it with a reason. Returns how many jobs were requeued.
    """
    stalled = list(await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=seconds_since_heartbeat))
    for job in stalled:
        logger.warning("requeueing stalled job %s (%s)", job.id, job.task_name)
        await app.job_manager.retry_job(job)
    return len(stalled)
