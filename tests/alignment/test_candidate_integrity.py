"""A run's candidates never outlive their sentences, though the database checks only their run and pair.

A candidate's sentences have no database constraint (CandidateAlignment's comment says why): a sentence is deleted
only with its document, whose pairs go in the same transaction, and the pair's constraints stay (the candidates',
the aligned pair's, the paragraph groups'). These tests hold that up: Django's cascade removes a deleted document's
candidates, and a batch stored while its document is deleted fails on its pair instead of leaving candidates behind
(without those constraints the second test fails: the batch commits and its candidates outlive their sentences).
"""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, connections, transaction

from alignment.aligning.measures import run_measure
from alignment.aligning.reading import pair_read
from alignment.aligning.service import alignment_run_create, run_scorer
from alignment.aligning.storing import AlignedOutcome, store_outcomes
from alignment.copying import table_name
from alignment.models import CandidateAlignment, Document, Sentence
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG


def _aligned(run, pair) -> AlignedOutcome:
    read = pair_read(pair.simple_document_id, pair.complex_document_id, "")
    outcome = run_scorer(run, run_measure, "").score(read.simple, read.complex_side)
    return AlignedOutcome(pair, read.simple, read.complex_side, outcome, 0.1)


def _candidates_without_sentences() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {table_name(CandidateAlignment)} c WHERE NOT EXISTS "
            f"(SELECT 1 FROM {table_name(Sentence)} s WHERE s.id = c.simple_sentence_id) OR NOT EXISTS "
            f"(SELECT 1 FROM {table_name(Sentence)} s WHERE s.id = c.complex_sentence_id)"
        )
        return cursor.fetchone()[0]


def test_deleting_a_document_deletes_the_candidates_of_its_sentences(stories) -> None:
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    pairs = list(run.pairs.order_by("pk"))
    store_outcomes(run.pk, [_aligned(run, pair) for pair in pairs])
    gone = pairs[0].complex_document_id
    assert CandidateAlignment.objects.filter(complex_sentence__document_id=gone).exists()

    Document.objects.filter(pk=gone).delete()

    assert CandidateAlignment.objects.filter(run=run).exists()  # the other pairs' stay
    assert not CandidateAlignment.objects.filter(pair_id=pairs[0].pk).exists()
    assert _candidates_without_sentences() == 0


@pytest.mark.django_db(transaction=True)
def test_a_batch_stored_while_its_document_is_deleted_fails_on_its_pair_and_leaves_no_candidate(stories) -> None:
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    pair = run.pairs.order_by("pk").first()
    item = _aligned(run, pair)
    written, deleted, failures = threading.Event(), threading.Event(), []

    def store_and_commit_after_the_delete() -> None:
        try:
            with transaction.atomic():
                store_outcomes(run.pk, [item])  # candidates written, not committed
                written.set()
                assert deleted.wait(10)
        except IntegrityError as error:
            failures.append(error)
        finally:
            written.set()
            connections.close_all()

    writer = threading.Thread(target=store_and_commit_after_the_delete)
    writer.start()
    assert written.wait(10)
    Document.objects.filter(pk=pair.complex_document_id).delete()  # commits while the batch waits
    deleted.set()
    writer.join(10)

    assert len(failures) == 1 and "pair_id" in str(failures[0])  # the pair's check, at the batch's commit
    assert not CandidateAlignment.objects.filter(run=run).exists()
    assert _candidates_without_sentences() == 0
