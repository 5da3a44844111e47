"""A project over a whole corpus: its pairs added in PostgreSQL, the same pairs whatever their number, in one statement."""

from __future__ import annotations

import pytest
from django.db import connection

from alignment.models import DocumentPair
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.models import AnnotationProject
from tests.annotation.conftest import bare_pairs


def _statements_and_values(make, **kwargs) -> tuple[tuple[int, int], object]:
    """(the statements ``make(**kwargs)`` sends and the values they carry, an array's items each), and what it returns."""
    values = []

    def record(execute, sql, params, many, context):
        values.append(sum(len(value) if isinstance(value, list | tuple) else 1 for value in params or ()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        made = make(**kwargs)
    return (len(values), sum(values)), made


def test_a_project_over_the_corpus_holds_its_pairs_and_no_others_and_sends_none_of_them(owner, corpus):
    other, _ = corpus_get_or_create(name="Elsewhere", language="en", owner=owner)
    bare_pairs(other, 5, "x")  # another corpus's pairs stay out
    sent = []
    for count, article in ((10, "a"), (60, "b")):
        bare_pairs(corpus, count, article)
        statements, project = _statements_and_values(services.project_create, name=f"All {count}", corpus=corpus, created_by=owner)
        sent.append(statements)
        corpus_pairs = set(DocumentPair.objects.filter(corpus=corpus).values_list("pk", flat=True))
        assert set(project.pairs.values_list("pk", flat=True)) == corpus_pairs and len(corpus_pairs) in (10, 70)
    assert sent[0] == sent[1]  # as many statements and values for 10 pairs as for 70: the request sends no pair


def test_chosen_pairs_are_the_project_s_alone(owner, corpus):
    pairs = bare_pairs(corpus, 6)
    project = services.project_create(name="Some", corpus=corpus, created_by=owner, pairs=pairs[1:3], overlap=1)
    assert list(project.pairs.order_by("pk")) == pairs[1:3]


def test_a_corpus_without_pairs_is_refused_and_no_project_is_made(owner, corpus):
    with pytest.raises(ValueError, match="has no document pairs to annotate"):
        services.project_create(name="Empty", corpus=corpus, created_by=owner)
    assert not AnnotationProject.objects.exists()
