"""What an alignment run stores: one pair's outcome, a huge pair's blocks, and the run's counters, each under the run's row lock."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.db.models import F, Sum
from django.utils import timezone

from alignment.aligning.scoring import PairOutcome, SideSentences, pack_matrices
from alignment.copying import copy_rows, json_int_list, table_name
from alignment.jobs.database import commit_without_flush
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair, PairBlock, ParagraphAlignment

if TYPE_CHECKING:
    from alignment.jobs.helper_io import RunIO

PARAGRAPH_COLUMNS = ("run_id", "pair_id", "simple_paragraphs", "complex_paragraphs")
ALIGNED_PAIR_COLUMNS = ("run_id", "pair_id", "simple_count", "complex_count", "matrices", "viterbi", "seconds", "created_at")
CANDIDATE_COLUMNS = (
    "run_id", "pair_id", "simple_sentence_id", "complex_sentence_id", "scores", "score", "crf_marginal", "label",
    "group_index", "group_score", "disagreement",
)  # fmt: skip


def store_block(
    run_id: int,
    pair: DocumentPair,
    block: PairBlock,
    outcome: PairOutcome,
    simple: tuple[SideSentences, list[int]],
    complex_side: tuple[SideSentences, list[int]],
    cols: list[int],
    started: float,
) -> None:
    """One block's paragraph groups and candidates (group numbers after the earlier blocks'), and the block marked done."""
    commit_without_flush()
    run = AlignmentRun.objects.select_for_update().get(pk=run_id)  # one writer per run at a time
    if PairBlock.objects.filter(pk=block.pk, done=True).exists():
        return  # a second worker on the same run (a requeued stalled job) stored this block first
    if not run.pairs.filter(pk=pair.pk, complex_document_id=pair.complex_document_id).exists():
        return  # the pair was flipped while it was aligned: this result is for the old direction
    offset = PairBlock.objects.filter(run_id=run_id, pair=pair, done=True).aggregate(total=Sum("groups"))["total"] or 0
    (simple_side, simple_paragraphs), (complex_block, complex_paragraphs) = simple, complex_side
    write_rows(run_id, pair, simple_side, complex_block, outcome, group_offset=offset, paragraphs=(simple_paragraphs, complex_paragraphs))
    seconds = time.perf_counter() - started
    viterbi = [[cols[c] for c in span] for span in outcome.result.chosen_complex]
    PairBlock.objects.filter(pk=block.pk).update(done=True, viterbi=viterbi, groups=len(outcome.result.groups), seconds=seconds)
    count_outcomes(run.pk, run.label_counts, [(outcome, seconds, len(simple_side.ids), 0)])


def store_blocked_pair(run_id: int, pair: DocumentPair, simple_count: int, complex_count: int) -> None:
    """The pair's AlignedPair once every block is done: the blocks' Viterbi states in order, no heatmap (too big to keep)."""
    AlignmentRun.objects.select_for_update().get(pk=run_id)
    if AlignedPair.objects.filter(run_id=run_id, pair=pair).exists():
        return
    blocks = list(PairBlock.objects.filter(run_id=run_id, pair=pair).order_by("index").values_list("done", "viterbi", "seconds"))
    if not blocks or not all(done for done, _, _ in blocks):
        return  # flipped meanwhile: the blocks after the flip were not stored
    AlignedPair.objects.create(
        run_id=run_id,
        pair=pair,
        simple_count=simple_count,
        complex_count=complex_count,
        matrices=b"",
        viterbi=[span for _, viterbi, _ in blocks for span in viterbi],
        seconds=sum(seconds for _, _, seconds in blocks),
    )
    AlignmentRun.objects.filter(pk=run_id).update(pairs_done=F("pairs_done") + 1, sentences_done=F("sentences_done") + complex_count)


@dataclass
class AlignedOutcome:
    """One pair aligned whole, not stored yet."""

    pair: DocumentPair
    simple: SideSentences
    complex_side: SideSentences
    outcome: PairOutcome
    seconds: float  # reading and scoring it


class PendingWrites:
    """Pairs aligned but not stored yet, stored together in one transaction once there are enough or they have waited.

    One transaction per pair cost about as much as aligning a small pair (the run's row lock, two checks, four
    writes and a commit each); a batch pays them once. Bounds: ``MAX_PAIRS`` pairs, ``MAX_CELLS`` cells of their
    score matrices in memory, ``MAX_SECONDS`` before they are stored; a stop or the end of a time slice stores them
    first, and an error loses only them (they are not marked aligned, so the run aligns them again when retried).
    With ``io`` (:class:`~alignment.jobs.helper_io.RunIO`) a batch is stored on its helper thread while the next
    fills: :meth:`store` hands it over (after the batch before it is stored), :meth:`flush` also waits for it.
    """

    MAX_PAIRS = 20
    MAX_CELLS = 1_000_000
    MAX_SECONDS = 0.5

    def __init__(self, run_id: int, io: RunIO | None = None) -> None:
        self.run_id = run_id
        self.io = io
        self.items: list[AlignedOutcome] = []
        self.cells = 0
        self.since = time.monotonic()
        self._storing: Future | None = None

    def add(self, item: AlignedOutcome) -> None:
        if not self.items:
            self.since = time.monotonic()
        self.items.append(item)
        self.cells += len(item.simple.ids) * len(item.complex_side.ids)

    def due(self) -> bool:
        return len(self.items) >= self.MAX_PAIRS or self.cells >= self.MAX_CELLS or time.monotonic() - self.since >= self.MAX_SECONDS

    def store(self) -> None:
        """Store the pairs held (on the helper, when there is one), once the batch before them is stored.

        When that batch failed, its error is raised here and the pairs held are dropped with it: a retry aligns them.
        """
        if not self.items:
            return
        items, self.items, self.cells = self.items, [], 0
        self.wait()
        if self.io is None:
            _store_batch(self.run_id, items)
        else:
            self._storing = self.io.submit(_store_batch, self.run_id, items)

    def flush(self) -> None:
        """Store the pairs held and wait until every batch handed over is stored (an error of one is raised here)."""
        self.store()
        self.wait()

    def wait(self) -> None:
        storing, self._storing = self._storing, None
        if storing is not None:
            storing.result()


def _store_batch(run_id: int, items: list[AlignedOutcome]) -> None:
    with transaction.atomic():
        store_outcomes(run_id, items)


def store_outcomes(run_id: int, items: list[AlignedOutcome]) -> None:
    """Aligned pairs' groups, candidates, heatmaps and the run's counters, under the run's row lock."""
    commit_without_flush()
    label_counts, open_pairs = _batch_lock(run_id, [item.pair.pk for item in items])
    # Left out: a pair a second worker on the same run (a requeued stalled job) stored first, and a pair flipped
    # (alignment/pairs_flip.py) while it was aligned, whose result is for the old direction.
    items = [item for item in items if (item.pair.pk, item.pair.complex_document_id) in open_pairs]
    if not items:
        return
    copy_rows(ParagraphAlignment, PARAGRAPH_COLUMNS, (row for item in items for row in paragraph_rows(run_id, item.pair, item.outcome)))
    candidates = (row for item in items for row in candidate_rows(run_id, item.pair, item.simple, item.complex_side, item.outcome))
    copy_rows(CandidateAlignment, CANDIDATE_COLUMNS, candidates)  # streamed: a pair's candidates were a third of its write time
    now = timezone.now()
    copy_rows(
        AlignedPair,
        ALIGNED_PAIR_COLUMNS,
        (
            (
                run_id,
                item.pair.pk,
                len(item.simple.ids),
                len(item.complex_side.ids),
                pack_matrices(item.outcome),
                json.dumps([list(span) for span in item.outcome.result.chosen_complex]),
                item.seconds,
                now,
            )  # fmt: skip
            for item in items
        ),
    )  # COPY, as the candidates: bulk_create built its INSERT in Python for 18 ms a batch, on the thread the scoring waits for
    count_outcomes(
        run_id, label_counts, [(item.outcome, item.seconds, len(item.simple.ids) + len(item.complex_side.ids), 1) for item in items]
    )


def _batch_lock(run_id: int, pair_ids: list[int]) -> tuple[dict[str, int], set[tuple[int, int]]]:
    """The run's label counts, read under its row lock (one writer per run at a time), and those of ``pair_ids`` that
    are still the run's pairs and have no result stored, each with its complex document: two statements on one cursor.

    Written in SQL, as the counters' UPDATE (:func:`count_outcomes`): the ORM's four statements of a batch took 9-10 ms
    of CPU to build and read, on the helper thread whose Python holds the GIL the scoring needs, against 1-1.5 ms
    (docs/benchmarks.md, "Corpus scale")."""
    with connection.cursor() as cursor:
        cursor.execute(RUN_LOCK_SQL, [run_id])
        row = cursor.fetchone()
        if row is None:
            raise AlignmentRun.DoesNotExist(f"alignment run {run_id} was deleted while it ran")
        cursor.execute(OPEN_PAIRS_SQL, [run_id, pair_ids, run_id])
        return json.loads(row[0]), set(cursor.fetchall())


_PAIRS = AlignmentRun._meta.get_field("pairs")  # the run's pairs: its through table and that table's two columns
RUN_LOCK_SQL = f"SELECT label_counts FROM {table_name(AlignmentRun)} WHERE id = %s FOR UPDATE"
OPEN_PAIRS_SQL = (
    f"SELECT p.id, p.complex_document_id FROM {table_name(_PAIRS.remote_field.through)} rp "
    f"JOIN {table_name(DocumentPair)} p ON p.id = rp.{connection.ops.quote_name(_PAIRS.m2m_reverse_name())} "
    f"WHERE rp.{connection.ops.quote_name(_PAIRS.m2m_column_name())} = %s AND p.id = ANY(%s) "
    f"AND NOT EXISTS (SELECT 1 FROM {table_name(AlignedPair)} a WHERE a.run_id = %s AND a.pair_id = p.id)"
)


def write_rows(
    run_id: int,
    pair: DocumentPair,
    simple: SideSentences,
    complex_side: SideSentences,
    outcome: PairOutcome,
    *,
    group_offset: int = 0,
    paragraphs: tuple[list[int], list[int]] | None = None,
) -> None:
    """Paragraph groups and candidates of one outcome; ``paragraphs`` maps a block's paragraph positions to the document's."""
    copy_rows(ParagraphAlignment, PARAGRAPH_COLUMNS, paragraph_rows(run_id, pair, outcome, paragraphs))
    copy_rows(CandidateAlignment, CANDIDATE_COLUMNS, candidate_rows(run_id, pair, simple, complex_side, outcome, group_offset))


def paragraph_rows(
    run_id: int, pair: DocumentPair, outcome: PairOutcome, paragraphs: tuple[list[int], list[int]] | None = None
) -> Iterator[tuple]:
    simple_map, complex_map = paragraphs if paragraphs is not None else (None, None)
    for group in outcome.result.paragraph_groups:
        yield (
            run_id, pair.pk, json_int_list([simple_map[p] for p in group.simple] if simple_map else group.simple),
            json_int_list([complex_map[p] for p in group.complex] if complex_map else group.complex),
        )  # fmt: skip


def candidate_rows(
    run_id: int, pair: DocumentPair, simple: SideSentences, complex_side: SideSentences, outcome: PairOutcome, group_offset: int = 0
) -> Iterator[tuple]:
    ids, pair_id = (simple.ids, complex_side.ids), pair.pk
    scores = _scores_template(outcome.candidates[0].scores) if outcome.candidates else ""
    for c in outcome.candidates:
        yield (
            run_id, pair_id, ids[0][c.simple], ids[1][c.complex], scores % tuple(c.scores.values()), c.scores[outcome.primary],
            c.crf_marginal, c.label, None if c.group_index is None else c.group_index + group_offset, c.group_score, c.disagreement,
        )  # fmt: skip


# The JSON columns go into the text COPY as JSON text, which PostgreSQL parses into jsonb. psycopg's Jsonb wrapper ran
# json.dumps and then its own dumper, on the run's helper thread, whose Python holds the GIL the scoring needs: storing
# 200 pairs took 0.57 s of its CPU instead of 0.67 (docs/benchmarks.md, "Corpus scale"). A list of ints is joined
# (json_int_list); a candidate's scores fill a template of the pair's measure names with each float's repr,
# json.dumps's own float format.


def _scores_template(first: dict[str, float]) -> str:
    """``'{"name": %r, ...}'`` for scores dicts with ``first``'s names in its order: every candidate of a pair has the
    same (select_candidates builds them from one list of names)."""
    return "{" + ", ".join(json.dumps(name).replace("%", "%%") + ": %r" for name in first) + "}"


def count_outcomes(run_id: int, label_counts: dict[str, int], outcomes: list[tuple[PairOutcome, float, int, int]]) -> None:
    """Add ``(outcome, seconds, sentences, pairs)`` to the run's counters; ``label_counts``: the run's, read under its row
    lock, so that they add up. One UPDATE written in SQL (see :func:`_batch_lock` for why)."""
    counts = dict(label_counts)
    for outcome, _, _, _ in outcomes:
        for label, count in outcome.label_counts.items():
            counts[label] = counts.get(label, 0) + count
    sums = {
        "pairs_done": sum(pairs for _, _, _, pairs in outcomes),
        "sentences_done": sum(sentences for _, _, sentences, _ in outcomes),
        "candidates_written": sum(len(outcome.candidates) for outcome, _, _, _ in outcomes),
        "encoder_seconds": sum(outcome.encoder_seconds for outcome, _, _, _ in outcomes),
        "measure_seconds": sum(outcome.measure_seconds for outcome, _, _, _ in outcomes),
        "aligner_seconds": sum(outcome.aligner_seconds for outcome, _, _, _ in outcomes),
        "busy_seconds": sum(seconds for _, seconds, _, _ in outcomes),
    }
    with connection.cursor() as cursor:
        cursor.execute(RUN_COUNTERS_SQL, [*(sums[column] for column in RUN_COUNTERS), json.dumps(counts), run_id])


RUN_COUNTERS = (
    "pairs_done",
    "sentences_done",
    "candidates_written",
    "encoder_seconds",
    "measure_seconds",
    "aligner_seconds",
    "busy_seconds",
)
RUN_COUNTERS_SQL = (
    f"UPDATE {table_name(AlignmentRun)} SET {', '.join(f'{column} = {column} + %s' for column in RUN_COUNTERS)}, label_counts = %s "
    "WHERE id = %s"
)
