"""What a MUSS pairs batch reads of the job's sequences: plain rows from one SQL query, not model instances.

Building a MiningSequence (and decoding its JSON through the field) per row, plus compiling an ``IN``
with one placeholder per neighbour, was about half of a pairs batch (bench/mining_memory.py's
profile); the rows here carry the same values (``neighbours`` decoded by ``json.loads`` from
PostgreSQL's text of the jsonb, as the JSONField does).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from django.db import connection

from alignment.mining.models import MiningJob, MiningSequence


class SequenceRow(NamedTuple):
    """The columns of a MiningSequence that the pairs phase reads (no vector: the neighbours carry the cosines)."""

    index: int
    document_id: int
    start: int
    end: int
    text: str
    neighbours: list | None
    knn_mean: float | None


def _select(job: MiningJob, condition: str, params: list) -> list[SequenceRow]:
    table = MiningSequence._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT index, document_id, start, "end", text, neighbours::text, knn_mean FROM {table} '
            f"WHERE job_id = %s AND {condition} ORDER BY index",
            [job.pk, *params],
        )
        return [
            SequenceRow(index, document, start, end, text, None if neighbours is None else json.loads(neighbours), knn_mean)
            for index, document, start, end, text, neighbours, knn_mean in cursor.fetchall()
        ]


def batch_rows(job: MiningJob, begin: int, end: int) -> tuple[list[SequenceRow], dict[int, SequenceRow]]:
    """The sequences [begin, end) in index order, and every sequence among their neighbours by index."""
    rows = _select(job, "index >= %s AND index < %s", [begin, end])
    wanted = sorted({int(j) for row in rows for j, _ in row.neighbours or []})
    others = _select(job, "index = ANY(%s::integer[])", [wanted]) if wanted else []
    return rows, {row.index: row for row in others}
