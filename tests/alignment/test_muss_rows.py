"""A MUSS pairs batch reads plain rows (alignment.mining.muss_rows) with the same values the ORM gives."""

from __future__ import annotations

import zlib

import numpy as np

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining import service as mining
from alignment.mining.models import MiningSequence
from alignment.mining.muss_rows import batch_rows
from alignment.mining.muss_service import neighbours_batch
from alignment.services import corpus_get_or_create

TEXTS = {
    "budget": "The committee approved the annual budget on Monday.\nIt said “costs” rose by 12%.\nL'école ferme à 18 h.",
    "budget-again": "On Monday the annual budget was approved by the committee.\nCosts rose, it said, by twelve per cent.",
    "river": "The river flooded the old town.\nResidents left their homes — again.\nA café reopened.",
}


def encode(texts: list[str]) -> np.ndarray:
    rows = np.stack([np.random.default_rng(zlib.crc32(text.encode())).normal(size=8) for text in texts]).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def orm_values(row: MiningSequence) -> tuple:
    ids, scores = (
        ([int(j) for j, _ in row.neighbours], [float(s) for _, s in row.neighbours]) if row.neighbours is not None else (None, None)
    )
    mean = row.neighbour_row.knn_mean if row.neighbours is not None else None
    return (row.index, row.document_id, row.start, row.end, row.text, ids, scores, mean)


def test_batch_rows_carry_the_orms_values_for_the_batch_and_its_neighbours(owner, db) -> None:
    corpus, _ = corpus_get_or_create(name="Rows", language="en", owner=owner)
    files = [(f"{title}-adv.txt", text.encode()) for title, text in TEXTS.items()]
    assert not corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="presplit")).errors
    job, _ = mining.mining_job_create(source_corpus=corpus, method="muss", config={"k": 3})
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    job.refresh_from_db()
    total = MiningSequence.objects.filter(job=job).count()
    assert total > 6

    rows, others = batch_rows(job, 2, 5)  # before the neighbours phase: no neighbours, no mean
    assert [tuple(row) for row in rows] == [
        orm_values(r) for r in MiningSequence.objects.filter(job=job, index__in=[2, 3, 4]).order_by("index")
    ]
    assert all(row.neighbour_ids is None and row.knn_mean is None for row in rows)
    assert others == {row.index: row for row in rows}  # no neighbours: no other row read

    neighbours_batch(job, 0, total)
    rows, others = batch_rows(job, 2, 5)
    stored = {r.index: r for r in MiningSequence.objects.filter(job=job)}
    assert [tuple(row) for row in rows] == [orm_values(stored[i]) for i in (2, 3, 4)]
    wanted = {j for i in (2, 3, 4) for j, _ in stored[i].neighbours}
    assert set(others) == wanted | {2, 3, 4}  # the batch's own rows as they were read, then each other one once
    for i, row in others.items():  # the others without their neighbours' scores (the pairs read the batch's own only)
        expected = orm_values(stored[i])
        assert tuple(row) == (expected if i in (2, 3, 4) else (*expected[:6], None, expected[7]))
    assert wanted - {2, 3, 4} and all(others[i] is rows[i - 2] for i in (2, 3, 4))
    assert all(
        isinstance(cosine, float) and isinstance(j, int) for row in rows for j, cosine in zip(row.neighbour_ids, row.neighbour_scores)
    )
    assert batch_rows(job, total, total + 10) == ([], {})
