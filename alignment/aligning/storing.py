"""What an alignment run stores: one pair's outcome, a huge pair's blocks, and the run's counters, each under the run's row lock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Sum
from psycopg.types.json import Jsonb

from alignment.aligning.scoring import PairOutcome, SideSentences, pack_matrices
from alignment.copying import copy_rows
from alignment.jobs.database import commit_without_flush
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment, DocumentPair, PairBlock, ParagraphAlignment

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
    count_outcomes(run, [(outcome, seconds, len(simple_side.ids), 0)])


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
    """

    MAX_PAIRS = 20
    MAX_CELLS = 1_000_000
    MAX_SECONDS = 0.5

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.items: list[AlignedOutcome] = []
        self.cells = 0
        self.since = time.monotonic()

    def add(self, item: AlignedOutcome) -> None:
        if not self.items:
            self.since = time.monotonic()
        self.items.append(item)
        self.cells += len(item.simple.ids) * len(item.complex_side.ids)

    def due(self) -> bool:
        return len(self.items) >= self.MAX_PAIRS or self.cells >= self.MAX_CELLS or time.monotonic() - self.since >= self.MAX_SECONDS

    def store(self) -> None:
        if self.items:
            with transaction.atomic():
                store_outcomes(self.run_id, self.items)
            self.items, self.cells = [], 0


def store_outcomes(run_id: int, items: list[AlignedOutcome]) -> None:
    """Aligned pairs' groups, candidates, heatmaps and the run's counters, under the run's row lock."""
    commit_without_flush()
    run = AlignmentRun.objects.select_for_update().get(pk=run_id)  # one writer per run at a time
    ids = [item.pair.pk for item in items]
    stored = set(AlignedPair.objects.filter(run_id=run_id, pair_id__in=ids).values_list("pair_id", flat=True))
    current = set(run.pairs.filter(pk__in=ids).values_list("pk", "complex_document_id"))
    # Left out: a pair a second worker on the same run (a requeued stalled job) stored first, and a pair flipped
    # (alignment/pairs_flip.py) while it was aligned, whose result is for the old direction.
    items = [item for item in items if item.pair.pk not in stored and (item.pair.pk, item.pair.complex_document_id) in current]
    if not items:
        return
    ParagraphAlignment.objects.bulk_create(row for item in items for row in paragraph_rows(run_id, item.pair, item.outcome))
    candidates = (row for item in items for row in candidate_rows(run_id, item.pair, item.simple, item.complex_side, item.outcome))
    copy_rows(CandidateAlignment, CANDIDATE_COLUMNS, candidates)  # streamed: a pair's candidates were a third of its write time
    AlignedPair.objects.bulk_create(
        AlignedPair(
            run_id=run_id,
            pair=item.pair,
            simple_count=len(item.simple.ids),
            complex_count=len(item.complex_side.ids),
            matrices=pack_matrices(item.outcome),
            viterbi=[list(span) for span in item.outcome.result.chosen_complex],
            seconds=item.seconds,
        )
        for item in items
    )
    count_outcomes(run, [(item.outcome, item.seconds, len(item.simple.ids) + len(item.complex_side.ids), 1) for item in items])


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
    ParagraphAlignment.objects.bulk_create(paragraph_rows(run_id, pair, outcome, paragraphs))
    copy_rows(CandidateAlignment, CANDIDATE_COLUMNS, candidate_rows(run_id, pair, simple, complex_side, outcome, group_offset))


def paragraph_rows(
    run_id: int, pair: DocumentPair, outcome: PairOutcome, paragraphs: tuple[list[int], list[int]] | None = None
) -> list[ParagraphAlignment]:
    simple_map, complex_map = paragraphs if paragraphs is not None else (None, None)
    return [
        ParagraphAlignment(
            run_id=run_id,
            pair=pair,
            simple_paragraphs=[simple_map[p] if simple_map else p for p in group.simple],
            complex_paragraphs=[complex_map[p] if complex_map else p for p in group.complex],
        )
        for group in outcome.result.paragraph_groups
    ]


def candidate_rows(
    run_id: int, pair: DocumentPair, simple: SideSentences, complex_side: SideSentences, outcome: PairOutcome, group_offset: int = 0
) -> Iterator[tuple]:
    ids = (simple.ids, complex_side.ids)
    for c in outcome.candidates:
        yield (
            run_id, pair.pk, ids[0][c.simple], ids[1][c.complex], Jsonb(c.scores), c.scores[outcome.primary], c.crf_marginal, c.label,
            None if c.group_index is None else c.group_index + group_offset, c.group_score, c.disagreement,
        )  # fmt: skip


def count_outcomes(run: AlignmentRun, outcomes: list[tuple[PairOutcome, float, int, int]]) -> None:
    """Add ``(outcome, seconds, sentences, pairs)`` to the run's counters (``run`` read under its row lock, so label_counts adds up)."""
    counts = dict(run.label_counts)
    for outcome, _, _, _ in outcomes:
        for label, count in outcome.label_counts.items():
            counts[label] = counts.get(label, 0) + count
    AlignmentRun.objects.filter(pk=run.pk).update(
        pairs_done=F("pairs_done") + sum(pairs for _, _, _, pairs in outcomes),
        sentences_done=F("sentences_done") + sum(sentences for _, _, sentences, _ in outcomes),
        candidates_written=F("candidates_written") + sum(len(outcome.candidates) for outcome, _, _, _ in outcomes),
        label_counts=counts,
        encoder_seconds=F("encoder_seconds") + sum(outcome.encoder_seconds for outcome, _, _, _ in outcomes),
        measure_seconds=F("measure_seconds") + sum(outcome.measure_seconds for outcome, _, _, _ in outcomes),
        aligner_seconds=F("aligner_seconds") + sum(outcome.aligner_seconds for outcome, _, _, _ in outcomes),
        busy_seconds=F("busy_seconds") + sum(seconds for _, seconds, _, _ in outcomes),
    )
