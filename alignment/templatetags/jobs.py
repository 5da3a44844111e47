"""``{% job_wait job as wait %}``: why a queued job has not started yet (alignment/jobs/health.py), for the job card."""

from __future__ import annotations

from django import template

from alignment.jobs.health import JobWait
from alignment.jobs.health import job_wait as queued_job_wait
from alignment.jobs.models import Job

register = template.Library()


@register.simple_tag
def job_wait(job: Job) -> JobWait | None:
    return queued_job_wait(job)
