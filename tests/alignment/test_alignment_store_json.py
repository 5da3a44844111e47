"""What a run stores (alignment/aligning/storing.py): its JSON columns go into the COPY as JSON text, the same jsonb as
the ORM writes; a batch is counted once, whoever stores it first, and a pair flipped or left out meanwhile is not stored."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connection
from django.db.models import Model
from psycopg.types.json import Jsonb

from alignment.aligning.measures import run_measure
from alignment.aligning.reading import pair_read
from alignment.aligning.service import alignment_run_create, run_scorer
from alignment.aligning.storing import AlignedOutcome, store_outcomes
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair, ParagraphAlignment
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG


def _as_the_orm_writes(value: object) -> str:
    """The jsonb's text of ``value`` sent as the ORM sends a JSONField's value."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [Jsonb(value)])
        return cursor.fetchone()[0]


def _stored_text(row: Model, column: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column}::text FROM {row._meta.db_table} WHERE id = %s", [row.pk])
        return cursor.fetchone()[0]


def test_scores_paragraph_groups_and_viterbi_are_stored_as_the_orm_would_store_them(stories) -> None:
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    pair = run.pairs.order_by("pk").first()
    read = pair_read(pair.simple_document_id, pair.complex_document_id, "")
    outcome = run_scorer(run, run_measure, "").score(read.simple, read.complex_side)
    odd = [0.1, 1e-07, 1.5e16, -0.0, 0.33333, 3]  # a name quoted, accented, with a % in it; floats small, large, signed
    names = [outcome.primary, 'a "quoted" é', "100% sure", "x"]
    outcome.candidates = [
        dataclasses.replace(candidate, scores={name: odd[(n + k) % len(odd)] for k, name in enumerate(names)})
        for n, candidate in enumerate(outcome.candidates)
    ]
    store_outcomes(run.pk, [AlignedOutcome(pair, read.simple, read.complex_side, outcome, 0.5)])

    stored = CandidateAlignment.objects.filter(run=run).order_by("simple_sentence_id", "complex_sentence_id")
    by_cell = {(read.simple.ids[c.simple], read.complex_side.ids[c.complex]): c.scores for c in outcome.candidates}
    assert len(stored) == len(by_cell) > 1
    for row in stored:
        expected = by_cell[(row.simple_sentence_id, row.complex_sentence_id)]
        assert row.scores == expected
        assert _stored_text(row, "scores") == _as_the_orm_writes(expected)
    groups = list(ParagraphAlignment.objects.filter(run=run).order_by("pk"))
    assert [(g.simple_paragraphs, g.complex_paragraphs) for g in groups] == [
        (list(group.simple), list(group.complex)) for group in outcome.result.paragraph_groups
    ]
    for group in groups:
        for column in ("simple_paragraphs", "complex_paragraphs"):
            assert _stored_text(group, column) == _as_the_orm_writes(getattr(group, column))
    aligned = AlignedPair.objects.get(run=run, pair=pair)
    assert aligned.viterbi == [list(span) for span in outcome.result.chosen_complex]
    assert _stored_text(aligned, "viterbi") == _as_the_orm_writes(aligned.viterbi)


def test_a_batch_stored_twice_counts_each_pair_once_and_a_pair_flipped_or_left_out_is_not_stored(stories) -> None:
    run = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    scorer = run_scorer(run, run_measure, "")
    items = []
    for pair in run.pairs.order_by("pk"):
        read = pair_read(pair.simple_document_id, pair.complex_document_id, "")
        items.append(AlignedOutcome(pair, read.simple, read.complex_side, scorer.score(read.simple, read.complex_side), 0.5))
    first, second, third = items
    store_outcomes(run.pk, [first])
    store_outcomes(run.pk, [first, second])  # a second worker on the run (a requeued stalled shard) stored the first
    before_flip = DocumentPair(
        pk=third.pair.pk, simple_document_id=third.pair.complex_document_id, complex_document_id=third.pair.simple_document_id
    )
    flipped = dataclasses.replace(third, pair=before_flip)  # aligned in the direction the pair had before a flip
    run.pairs.remove(second.pair)
    store_outcomes(run.pk, [flipped, second])  # neither is the run's pair as it is now

    run.refresh_from_db()
    done = [first, second]
    assert sorted(AlignedPair.objects.filter(run=run).values_list("pair_id", flat=True)) == [first.pair.pk, second.pair.pk]
    assert run.pairs_done == 2 and run.busy_seconds == 1.0
    assert (
        run.candidates_written == sum(len(item.outcome.candidates) for item in done) == CandidateAlignment.objects.filter(run=run).count()
    )
    assert run.sentences_done == sum(len(item.simple.ids) + len(item.complex_side.ids) for item in done)
    expected: dict[str, int] = {}
    for item in done:
        for label, count in item.outcome.label_counts.items():
            expected[label] = expected.get(label, 0) + count
    assert run.label_counts == expected and sum(expected.values()) == run.candidates_written
    assert run.measure_seconds == pytest.approx(sum(item.outcome.measure_seconds for item in done))

    gone = run.pk
    run.delete()
    with pytest.raises(AlignmentRun.DoesNotExist, match=f"alignment run {gone} was deleted"):
        store_outcomes(gone, [third])
