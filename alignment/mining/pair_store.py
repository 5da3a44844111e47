"""Mined pairs as plain rows, stored by binary COPY: what an LHA or MUSS shard writes.

A shard built a ``MinedPair`` model instance per pair only to read its attributes back into the COPY: Django's
``Model.__init__`` over 18 fields was 0.4 s of a 30,000-pair LHA job's 3.9 s of shards (bench/lha_scale.py, py-spy).
A :class:`PairRow` carries the same values, in the table's column order.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import psycopg
from django.db import IntegrityError, transaction
from psycopg.types.json import Jsonb

from alignment.copying import copy_binary, json_int_list
from alignment.mining.models import MinedPair


class PairRow(NamedTuple):
    """One mined pair's columns (:class:`~alignment.mining.models.MinedPair`'s, by the same names)."""

    job_id: int
    source_document_id: int
    target_document_id: int
    source_sentences: list[int]
    target_sentences: list[int]
    source_key: str
    target_key: str
    source_text: str
    target_text: str
    source_count: int
    target_count: int
    source_tokens: int
    target_tokens: int
    score: float
    doc_score: float | None
    length_ratio: float
    overlap: float | None
    features: dict


PAIR_TYPES = (
    "int8", "int8", "int8", "jsonb", "jsonb", "varchar", "varchar", "text", "text", "int2", "int2", "int4", "int4", "float8", "float8",
    "float8", "float8", "jsonb",
)  # fmt: skip


def mined_pairs_store(pairs: list[PairRow]) -> None:
    """A batch's pairs by binary COPY (``bulk_create`` compiled an INSERT of 18 placeholders a row: a tenth of the pairs
    phase). The batch commits with its shard's position, so a resumed shard never stores it twice; should a second
    worker on the same shard have stored it first (a requeued stalled task), the unique key refuses the COPY and the
    batch goes in row by row, skipping the pairs already there."""
    rows = ((*p[:3], _indices(p.source_sentences), _indices(p.target_sentences), *p[5:17], _written(json.dumps(p.features))) for p in pairs)
    try:
        with transaction.atomic():  # a savepoint: the fallback below runs in the batch's transaction
            copy_binary(MinedPair, PairRow._fields, PAIR_TYPES, rows)
    except (IntegrityError, psycopg.IntegrityError):  # the COPY runs on psycopg's own cursor: its error is psycopg's
        MinedPair.objects.bulk_create([MinedPair(**pair._asdict()) for pair in pairs], ignore_conflicts=True, batch_size=1000)


def _indices(indices: list[int]) -> Jsonb:
    """A pair's sentence indices as a JSON array."""
    return _written(json_int_list(indices))


def _written(text: str) -> Jsonb:
    """A JSON value already written as text, sent as it is. ``Jsonb(value)``, which psycopg's dumper writes with
    ``json.dumps`` then wraps again, took 3.1-3.7 µs a value (timeit), 10 µs of each pair's row, on the helper thread
    that holds the GIL the mining needs meanwhile. Written here: about 1 µs for the indices, 3 µs for the features; a
    30,000-pair LHA job's helper thread went from 0.80-0.97 to 0.72-0.83 s of CPU (bench/lha_scale.py's corpora)."""
    return Jsonb(text, _as_is)


def _as_is(text: str) -> str:
    return text
