"""What an alignment run stores: one pair's outcome, a huge pair's blocks, and the run's counters, each under the run's row lock."""

from __future__ import annotations

import time

from django.db import connection
from django.db.models import F, Sum
from psycopg.types.json import Jsonb

from alignment.aligning.scoring import PairOutcome, SideSentences, pack_matrices
from alignment.copying import copy_rows
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
    count_outcome(run, outcome, seconds, sentences=len(simple_side.ids))


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


def store_outcome(
    run_id: int, pair: DocumentPair, simple: SideSentences, complex_side: SideSentences, outcome: PairOutcome, started: float
) -> None:
    result = outcome.result
    commit_without_flush()
    run = AlignmentRun.objects.select_for_update().get(pk=run_id)  # one writer per run at a time
    if AlignedPair.objects.filter(run_id=run_id, pair=pair).exists():
        return  # a second worker on the same run (a requeued stalled job) stored this pair first
    if not run.pairs.filter(pk=pair.pk, complex_document_id=pair.complex_document_id).exists():
        return  # the pair was flipped (alignment/pairs_flip.py) while it was aligned: this result is for the old direction
    write_rows(run_id, pair, simple, complex_side, outcome)
    seconds = time.perf_counter() - started
    AlignedPair.objects.create(
        run_id=run_id,
        pair=pair,
        simple_count=len(simple.ids),
        complex_count=len(complex_side.ids),
        matrices=pack_matrices(outcome),
        viterbi=[list(span) for span in result.chosen_complex],
        seconds=seconds,
    )
    count_outcome(run, outcome, seconds, sentences=len(simple.ids) + len(complex_side.ids), pairs=1)


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
    simple_map, complex_map = paragraphs if paragraphs is not None else (None, None)
    ParagraphAlignment.objects.bulk_create(
        ParagraphAlignment(
            run_id=run_id,
            pair=pair,
            simple_paragraphs=[simple_map[p] if simple_map else p for p in group.simple],
            complex_paragraphs=[complex_map[p] if complex_map else p for p in group.complex],
        )
        for group in outcome.result.paragraph_groups
    )
    ids = (simple.ids, complex_side.ids)
    rows = (
        (
            run_id, pair.pk, ids[0][c.simple], ids[1][c.complex], Jsonb(c.scores), c.scores[outcome.primary], c.crf_marginal, c.label,
            None if c.group_index is None else c.group_index + group_offset, c.group_score, c.disagreement,
        )
        for c in outcome.candidates
    )  # fmt: skip
    copy_rows(CandidateAlignment, CANDIDATE_COLUMNS, rows)  # streamed: a pair's candidates were a third of its write time


def commit_without_flush() -> None:
    """This transaction's commit need not wait for its WAL to reach the disk (as a file's import, alignment/importing).

    WAL is flushed in order, so the job's next heartbeat (a synchronous commit, right after the pair) makes the pair
    durable too; a crash before that loses the pair's rows together with its AlignedPair, so a resumed run aligns it again.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


def count_outcome(run: AlignmentRun, outcome: PairOutcome, seconds: float, *, sentences: int, pairs: int = 0) -> None:
    """Add one outcome to the run's counters (``run`` read under its row lock, so label_counts adds up)."""
    counts = dict(run.label_counts)
    for label, count in outcome.label_counts.items():
        counts[label] = counts.get(label, 0) + count
    AlignmentRun.objects.filter(pk=run.pk).update(
        pairs_done=F("pairs_done") + pairs,
        sentences_done=F("sentences_done") + sentences,
        candidates_written=F("candidates_written") + len(outcome.candidates),
        label_counts=counts,
        encoder_seconds=F("encoder_seconds") + outcome.encoder_seconds,
        measure_seconds=F("measure_seconds") + outcome.measure_seconds,
        aligner_seconds=F("aligner_seconds") + outcome.aligner_seconds,
        busy_seconds=F("busy_seconds") + seconds,
    )
