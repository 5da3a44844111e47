"""Reads of mining jobs that the pages, the REST API and ``manage.py mine`` share."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from alignment import selectors
from alignment.mining.models import MiningJob


def mining_jobs_visible_to(user: AbstractBaseUser | AnonymousUser) -> QuerySet[MiningJob]:
    """Jobs whose corpora the user may both see (a MUSS job's two are one), newest first, with their corpora.

    The hybrid jobs' IDF (hundreds of KB) is never read: pages poll these rows every few seconds."""
    visible = selectors.corpora_visible_to(user)
    return (
        MiningJob.objects.filter(source_corpus__in=visible, target_corpus__in=visible)
        .select_related("source_corpus", "target_corpus", "created_by")
        .defer("lexical_idf")
        .order_by("-pk")
    )
