"""``{% job_wait job as wait %}``: why a queued job has not started yet (alignment/jobs/health.py), for the job card;
``{% embedding_wait_line run as line %}``: what a running alignment run, or shards of it, wait for."""

from __future__ import annotations

from django import template

from alignment.aligning.embedding_wait import running_wait_line
from alignment.jobs.health import JobWait
from alignment.jobs.health import job_wait as queued_job_wait
from alignment.jobs.models import Job
from alignment.models import AlignmentRun

register = template.Library()


@register.simple_tag
def job_wait(job: Job) -> JobWait | None:
    return queued_job_wait(job)


@register.simple_tag
def embedding_wait_line(run: AlignmentRun) -> str:
    return running_wait_line(run)
