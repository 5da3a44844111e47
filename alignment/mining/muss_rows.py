"""What a MUSS pairs batch reads of the job's sequences: plain rows from one SQL query, not model instances.

Building a MiningSequence (and decoding its JSON through the field) per row, plus compiling an ``IN``
with one placeholder per neighbour, was about half of a pairs batch (bench/mining_memory.py's
profile); the rows here carry the same values. The neighbours are stored as two arrays (indices, scores),
which psycopg reads in C: a jsonb list decoded in Python (``json.loads``, the batch's rows and every
neighbour's) was a quarter of the pairs phase at 30,000 sequences (bench/mining_scale.py). They live in a narrow table
of their own (:class:`MiningNeighbours`), joined here.
"""

from __future__ import annotations

from typing import NamedTuple

from django.db import connection

from alignment.mining.models import MiningJob, MiningNeighbours, MiningSequence


class SequenceRow(NamedTuple):
    """The columns of a MiningSequence that the pairs phase reads (no vector: the neighbours carry the cosines);
    the neighbours as two lists (indices, scores; None before the neighbours phase, and the scores None where they
    were not read: :func:`batch_rows`)."""

    index: int
    document_id: int
    start: int
    end: int
    text: str
    neighbour_ids: list[int] | None
    neighbour_scores: list[float] | None
    knn_mean: float | None


def _select(job: MiningJob, condition: str, params: list, scores: bool = True) -> list[SequenceRow]:
    table, neighbours = MiningSequence._meta.db_table, MiningNeighbours._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT s.index, s.document_id, s.start, s."end", s.text, n.ids, {"n.scores" if scores else "NULL"}, n.knn_mean '
            f"FROM {table} AS s LEFT JOIN {neighbours} AS n ON n.sequence_id = s.id WHERE s.job_id = %s AND {condition} "
            "ORDER BY s.index",
            [job.pk, *params],
        )
        return [SequenceRow(*row) for row in cursor.fetchall()]


def batch_rows(job: MiningJob, begin: int, end: int) -> tuple[list[SequenceRow], dict[int, SequenceRow]]:
    """The sequences [begin, end) in index order, and every sequence among their neighbours by index (those outside
    the batch without their neighbours' scores, which a pairs batch reads of its own rows only: parsing them was half
    of reading the others, about seven a sequence)."""
    rows = _select(job, "s.index >= %s AND s.index < %s", [begin, end])
    own = {row.index: row for row in rows}
    wanted = sorted({j for row in rows for j in row.neighbour_ids or ()} - own.keys())
    others = _select(job, "s.index = ANY(%s::integer[])", [wanted], scores=False) if wanted else []
    return rows, own | {row.index: row for row in others}
