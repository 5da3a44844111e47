"""Document vectors for LHA: the unit mean of each document's current sentence vectors, stored once per encoder
(``DocumentEmbedding``), with pgvector's partial HNSW index over them where the document step searches in PostgreSQL.

A prepare stores both corpora's at once (:func:`corpora_document_vectors`): one corpus on a helper thread's
connection, the other on the prepare's own, so that PostgreSQL averages them on both cores. One after the other,
they were about half of a 3,000 + 3,000-document prepare's 0.6-0.7 s, while the other core idled (bench/lha_scale.py).
"""

from __future__ import annotations

from functools import partial

from django.db import connection, transaction
from django.template.defaultfilters import pluralize

from alignment.index_loading import index_abandoned, index_drop, index_make_room, indexed_rows
from alignment.jobs.helper_io import RunIO, at_once
from alignment.mining.cancelling import NEVER, CancelCheck
from alignment.mining.models import DocumentEmbedding
from alignment.mining.search_backend import partial_hnsw_index
from alignment.mining.statistics import statistics_refresh
from alignment.models import Corpus, Document, Encoder, Sentence, SentenceEmbedding


def corpora_document_vectors(corpora: list[Corpus], encoder: Encoder, check: CancelCheck, *, refresh: bool) -> None:
    """Every document vector ``corpora`` lack, the corpora at once (the first on a helper connection); ``refresh``:
    ANALYZE the sentence tables first, the two tables at once likewise (corpora just loaded and embedded). No index:
    the caller builds it once both corpora are stored."""
    io = RunIO()
    try:
        if refresh:
            at_once(io, [partial(statistics_refresh, [table]) for table in (SentenceEmbedding, Sentence)])
        at_once(io, [partial(document_vectors_ensure, corpus=corpus, encoder=encoder, check=check, index=False) for corpus in corpora])
    finally:
        io.close()


def document_vectors_ensure(*, corpus: Corpus, encoder: Encoder, check: CancelCheck = NEVER, index: bool = True) -> int:
    """Store the mean sentence vector of every document of ``corpus`` that has none; returns how many were added.
    ``check``: a prepare's cancel check, after each batch of documents and during the index build. ``index``: build the
    encoder's document index afterwards (a prepare of two new corpora stores both first: rows added to an existing
    HNSW index go in one by one, which took 6.6 s of 3,000 documents' 10 s prepare in bench/lha_scale.py)."""
    missing = Sentence.objects.filter(document__corpus=corpus).exclude(embeddings__encoder=encoder).count()
    if missing:
        sentences = f"{missing} sentence{pluralize(missing)} {'has' if missing == 1 else 'have'}"
        raise ValueError(f"corpus {corpus.name!r}: {sentences} no vector from {encoder.name}; run its embedding job first")
    added, after = 0, 0
    while after is not None:  # a batch of documents at a time, by pk, until none is left without a vector
        after, stored = _document_vectors_store(corpus, encoder, after)
        added += stored
        check()
    if index:
        document_index_ensure(encoder, check)
    return added


DOCUMENT_VECTOR_BATCH = 1_000


def _document_vectors_store(corpus: Corpus, encoder: Encoder, after: int) -> tuple[int | None, int]:
    """The next DOCUMENT_VECTOR_BATCH documents of ``corpus`` after pk ``after`` without a vector from ``encoder`` get the
    unit mean of their current sentences' vectors (zeros for a document without any), computed where the vectors are
    (pgvector's ``avg`` and ``l2_normalize``): the last pk of the batch (None when there was none) and how many were
    stored. A vector another prepare over the same corpus stored first is kept (the unique key, ``DO NOTHING``).

    Reading every sentence vector into the worker to average it there, then writing the means back, was 1.1 s of
    3,000 + 3,000 documents' 1.5 s prepare (bench/lha_scale.py, py-spy)."""
    quote = connection.ops.quote_name
    vectors, documents, sentences, embeddings = (
        quote(model._meta.db_table) for model in (DocumentEmbedding, Document, Sentence, SentenceEmbedding)
    )
    sql = (
        f"WITH batch AS (SELECT d.id FROM {documents} AS d WHERE d.corpus_id = %(corpus)s AND d.id > %(after)s AND NOT EXISTS "
        f"(SELECT 1 FROM {vectors} AS v WHERE v.document_id = d.id AND v.encoder_id = %(encoder)s) ORDER BY d.id LIMIT %(limit)s), "
        f"stored AS (INSERT INTO {vectors} (document_id, encoder_id, vector) "
        "SELECT b.id, %(encoder)s, COALESCE(l2_normalize(avg(e.vector)), array_fill(0::real, ARRAY[%(dimensions)s])::vector) "
        f"FROM batch AS b LEFT JOIN {sentences} AS s ON s.document_id = b.id AND s.retired_by_id IS NULL "
        f"LEFT JOIN {embeddings} AS e ON e.sentence_id = s.id AND e.encoder_id = %(encoder)s GROUP BY b.id "
        "ON CONFLICT (document_id, encoder_id) DO NOTHING RETURNING 1) "
        "SELECT (SELECT max(id) FROM batch), (SELECT count(*) FROM stored)"
    )
    parameters = {
        "corpus": corpus.pk, "after": after, "encoder": encoder.pk, "limit": DOCUMENT_VECTOR_BATCH, "dimensions": int(encoder.dimensions)
    }  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        last, stored = cursor.fetchone()
    return last, int(stored)


def document_index_name(encoder: Encoder) -> str:
    """The name of pgvector's partial HNSW index over ``encoder``'s document vectors."""
    return f"document_embedding_hnsw_{int(encoder.pk)}"


def document_index_make_room(corpora: list[Corpus], encoder: Encoder, check: CancelCheck = NEVER) -> bool:
    """Before ``corpora``'s document vectors are stored: drop the encoder's document index when they are a large share
    of what it holds (:func:`alignment.index_loading.index_make_room`); :func:`document_index_ensure` builds it again.
    ``check``: the prepare's cancel check, which stops the drop's wait for the transactions reading the table."""
    name = document_index_name(encoder)
    if indexed_rows(name) is None:
        return False
    adding = Document.objects.filter(corpus__in=corpora).exclude(embeddings__encoder=encoder).count()
    with check.statement():
        return index_make_room(name, adding)


def document_index_ensure(encoder: Encoder, check: CancelCheck) -> None:
    """Build the encoder's document index if it is missing; an invalid one a cancelled drop left is dropped first."""
    name = document_index_name(encoder)
    if index_abandoned(name):
        with check.statement():
            index_drop(name)
    partial_hnsw_index(name, DocumentEmbedding._meta.db_table, int(encoder.dimensions), "encoder_id", encoder.pk, check=check)
