"""Reads of mining jobs that the pages, the REST API and ``manage.py mine`` share."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Exists, OuterRef, QuerySet

from alignment import selectors
from alignment.mining.models import MiningJob, MiningShard


def mining_jobs_visible_to(user: AbstractBaseUser | AnonymousUser) -> QuerySet[MiningJob]:
    """Jobs whose corpora the user may both see (a MUSS job's two are one), newest first, with their corpora.

    The hybrid jobs' IDF (hundreds of KB) is never read: pages poll these rows every few seconds. Each row says whether
    its job is in its encode phase (``MiningJob.unit``), so a list of jobs asks no query per job for it."""
    visible = selectors.corpora_visible_to(user)
    shards = MiningShard.objects.filter(job=OuterRef("pk"))
    return (
        MiningJob.objects.filter(source_corpus__in=visible, target_corpus__in=visible)
        .select_related("source_corpus", "target_corpus", "created_by")
        .defer("lexical_idf")
        .annotate(encoding=Exists(shards.filter(phase="encode")) & ~Exists(shards.filter(phase="neighbours")))
        .order_by("-pk")
    )
