"""What an alignment run reads: a pair's two documents' sentences and their stored vectors, in few round trips."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from alignment.aligning.scoring import SideSentences
from alignment.copying import packed_dimensions, table_name, unpacked_vectors, vector_cursor
from alignment.models import Encoder, Paragraph, Sentence, SentenceEmbedding


def side_sentences(document_id: int, encoder_name: str, *, vectors: bool = True) -> SideSentences:
    """One document's sentences in order, with stored vectors when every sentence has one (and ``vectors``)."""
    side = _side(list(Sentence.objects.filter(document_id=document_id).order_by("index").values_list("pk", "text", "paragraph__index")))
    side.vectors = stored_vectors(side.ids, encoder_name) if vectors else None
    return side


def pair_sides(simple_id: int, complex_id: int) -> tuple[SideSentences, SideSentences]:
    """The two documents' sentences as :func:`side_sentences` reads them (no vectors), in one query."""
    rows = Sentence.objects.filter(document_id__in=[simple_id, complex_id]).order_by("index")
    by_document = _by_document(rows.values_list("document_id", "pk", "text", "paragraph__index"), [simple_id, complex_id])
    return _side(by_document[simple_id]), _side(by_document[complex_id])


def _by_document(rows, documents: list[int]) -> dict[int, list[tuple]]:
    """Rows ``(document_id, *rest)`` as each document's ``rest`` in the rows' order (an empty list for one without rows)."""
    grouped: dict[int, list[tuple]] = {document: [] for document in documents}
    for document_id, *rest in rows:
        grouped[document_id].append(tuple(rest))
    return grouped


def _side(rows: list[tuple[int, str, int]]) -> SideSentences:
    paragraph_numbers = sorted({paragraph for _, _, paragraph in rows})
    dense = {number: position for position, number in enumerate(paragraph_numbers)}  # paragraphs without sentences are skipped
    return SideSentences(ids=[pk for pk, _, _ in rows], texts=[text for _, text, _ in rows], paragraphs=[dense[p] for _, _, p in rows])


def stored_vectors(ids: Sequence[int], encoder_name: str) -> np.ndarray | None:
    """The (len(ids), d) stored vectors of these sentences, in order; None unless every one has a vector."""
    if not ids:
        return None
    with vector_cursor(packed=True) as cursor:
        cursor.execute(STORED_VECTORS_SQL, [encoder_name, list(ids)], binary=True)
        stored = dict(cursor.fetchall())
    if len(stored) != len(ids):
        return None
    return unpacked_vectors([stored[pk] for pk in ids], packed_dimensions(stored[ids[0]]))  # (count, d)


STORED_VECTORS_SQL = (
    f"SELECT e.sentence_id, e.vector FROM {SentenceEmbedding._meta.db_table} e JOIN {Encoder._meta.db_table} c ON c.id = e.encoder_id "
    "WHERE c.name = %s AND e.sentence_id = ANY(%s)"
)


@dataclass
class PairRead:
    """A pair as a run scores it whole: both sides with their vectors (when every sentence has one)."""

    simple: SideSentences
    complex_side: SideSentences
    seconds: float  # reading it


def pair_read(simple_id: int, complex_id: int, encoder_name: str) -> PairRead | None:
    """Both sides of a pair with their stored vectors; None for a pair past ``ALIGN_BLOCK_MIN_CELLS``, aligned block
    by block instead (only its sentence counts are read here, so a huge pair's text is never held twice)."""
    return pairs_read([(simple_id, complex_id)], encoder_name)[0]


def pairs_read(pairs: Sequence[tuple[int, int]], encoder_name: str, max_sentences: int | None = None) -> list[PairRead | None]:
    """:func:`pair_read` of several ``(simple, complex)`` document pairs at once, in their order; with
    ``max_sentences``, of the first of them whose sentences read whole add up to at most that many (the first always).

    Two prepared queries for them all, no ORM, vectors read packed (one matrix a side, not a ``Vector`` a row): on the
    run's helper thread (:mod:`alignment.aligning.pipeline`) the time a read holds the GIL is time the scoring waits.
    Building the ORM's three queries took 5 ms of a short pair's 30; a pair's own cursor and two queries still took
    about 2.2 ms of the helper's CPU (a fifth of it setting up the cursor's types); four pairs together take 1.1 ms a pair.
    """
    started = time.perf_counter()
    with vector_cursor(packed=True) as cursor:
        cursor.execute(PAIR_SIZES_SQL, [sorted({document for pair in pairs for document in pair})], prepare=True)
        counts = dict(cursor.fetchall())
        whole = _read_whole(pairs, counts, max_sentences)
        pairs = pairs[: len(whole)]
        documents = sorted({document for pair, read in zip(pairs, whole) if read for document in pair})
        rows = []
        if documents:
            cursor.execute(PAIR_ROWS_SQL, [encoder_name, documents], binary=True, prepare=True)
            rows = cursor.fetchall()
    by_document = _by_document(rows, documents)  # (pk, text, paragraph, vector) of each document's sentences
    seconds = (time.perf_counter() - started) / len(pairs)
    return [
        _pair_read(by_document[simple_id], by_document[complex_id], seconds) if read else None
        for (simple_id, complex_id), read in zip(pairs, whole)
    ]


def _read_whole(pairs: Sequence[tuple[int, int]], counts: dict[int, int], max_sentences: int | None) -> list[bool]:
    """Whether each pair is read whole (a huge one is aligned block by block instead), for the first pairs whose
    sentences read whole stay within ``max_sentences`` (the first pair always)."""
    whole, total = [], 0
    for simple_id, complex_id in pairs:
        simple_count, complex_count = counts.get(simple_id, 0), counts.get(complex_id, 0)
        read = simple_count * complex_count <= settings.ALIGN_BLOCK_MIN_CELLS
        total += (simple_count + complex_count) if read else 0
        if whole and max_sentences is not None and total > max_sentences:
            break
        whole.append(read)
    return whole


def _pair_read(simple_rows: list[tuple], complex_rows: list[tuple], seconds: float) -> PairRead:
    simple, complex_side = _side([row[:3] for row in simple_rows]), _side([row[:3] for row in complex_rows])
    both = simple_rows + complex_rows
    if both and all(row[3] is not None for row in both):  # every sentence has a vector: (count, d) each, (0, d) for an empty side
        width = packed_dimensions(both[0][3])
        simple.vectors, complex_side.vectors = (unpacked_vectors([row[3] for row in rows], width) for rows in (simple_rows, complex_rows))
    return PairRead(simple, complex_side, seconds)


# The current segmentation (retired_by_id IS NULL), as Sentence.objects reads it.
PAIR_SIZES_SQL = (
    f"SELECT document_id, count(*) FROM {table_name(Sentence)} WHERE document_id = ANY(%s) AND retired_by_id IS NULL GROUP BY document_id"
)
PAIR_ROWS_SQL = (
    f"SELECT s.document_id, s.id, s.text, p.index, e.vector FROM {table_name(Sentence)} s "
    f"JOIN {table_name(Paragraph)} p ON p.id = s.paragraph_id "
    f"LEFT JOIN {table_name(SentenceEmbedding)} e ON e.sentence_id = s.id "
    f"AND e.encoder_id = (SELECT id FROM {table_name(Encoder)} WHERE name = %s) "
    "WHERE s.document_id = ANY(%s) AND s.retired_by_id IS NULL ORDER BY s.index"
)
