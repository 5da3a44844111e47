"""Making a project: over chosen pairs of a corpus, or all of them, its creator its manager.

Re-exported by :mod:`annotation.services`, where callers find it.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from alignment.copying import table_name
from alignment.errors import ServiceError
from alignment.models import AlignmentRun, Corpus, DocumentPair
from annotation.models import AnnotationProject, ProjectMembership
from annotation.selectors import project_name_refusal


def project_create(
    *,
    name: str,
    corpus: Corpus,
    created_by: AbstractBaseUser,
    pairs: Sequence[DocumentPair] | None = None,
    suggestion_run: AlignmentRun | None = None,
    guidelines: str = "",
    overlap: int = 2,
    strategy: str = AnnotationProject.Strategy.DOCUMENTS,
) -> AnnotationProject:
    """A project over ``pairs`` (default: all of the corpus); its creator becomes its manager.

    All of the corpus is added by one statement in PostgreSQL: read into the request as model instances and added by
    the ORM, a 10,000-pair corpus's pairs took 0.41 s of it against 0.05-0.08 s (docs/benchmarks.md, "Corpus scale"),
    and the request grew with the corpus."""
    chosen = list(pairs) if pairs is not None else None  # None: all of the corpus's, added in PostgreSQL
    empty = not chosen if chosen is not None else not corpus.pairs.exists()
    if empty:
        raise ValueError(f"corpus {corpus.name!r} has no document pairs to annotate")
    foreign = [pair.pk for pair in chosen or [] if pair.corpus_id != corpus.pk]
    if foreign:
        raise ValueError(f"document pairs {foreign} do not belong to corpus {corpus.name!r}")
    if suggestion_run is not None and suggestion_run.corpus_id != corpus.pk:
        raise ValueError(f"alignment run {suggestion_run.pk} belongs to another corpus")
    if overlap < 1:
        raise ValueError(f"overlap must be at least 1, got {overlap}")
    refusal = project_name_refusal(created_by, name)
    if refusal:
        raise ServiceError(refusal, field="name")
    with transaction.atomic():
        project = AnnotationProject.objects.create(
            name=name,
            corpus=corpus,
            suggestion_run=suggestion_run,
            guidelines=guidelines,
            overlap=overlap,
            strategy=strategy,
            created_by=created_by,
        )
        if chosen is None:
            with connection.cursor() as cursor:
                cursor.execute(CORPUS_PAIRS_ADD_SQL, [project.pk, corpus.pk])
        else:
            project.pairs.set(chosen)
        ProjectMembership.objects.create(project=project, user=created_by, role=ProjectMembership.Role.MANAGER)
    return project


_PAIRS = AnnotationProject._meta.get_field("pairs")  # the project's pairs: their through table and its two columns
CORPUS_PAIRS_ADD_SQL = (
    f"INSERT INTO {table_name(_PAIRS.remote_field.through)} "
    f"({connection.ops.quote_name(_PAIRS.m2m_column_name())}, {connection.ops.quote_name(_PAIRS.m2m_reverse_name())}) "
    f"SELECT %s, id FROM {table_name(DocumentPair)} WHERE corpus_id = %s"
)
