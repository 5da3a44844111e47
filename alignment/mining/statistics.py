"""The planner's statistics refreshed where a mining job starts on tables that have just grown."""

from __future__ import annotations

from django.db import connection, models

from alignment.copying import table_name


def statistics_refresh(tables: list[type[models.Model]]) -> None:
    """ANALYZE the models' tables (PostgreSQL samples a bounded number of rows: about a second however large they are).

    A job started right after its corpora were loaded and embedded ran on the planner's guesses from before the load:
    the sentences of 100 documents read by a scan of every current sentence (26 ms against 1.8), and a shard's
    nearest-document query as an exact scan of the target corpus per document (5.2 ms a document at 3,000 target
    documents, growing with the corpus, against 0.76 ms through the HNSW index; EXPLAIN ANALYZE on
    bench/lha_scale.py's corpora). A MUSS job's stream of its corpus's sentences (a server-side cursor, which the
    planner plans for its first rows) went through every document of the corpus for each sentence, taking the corpus
    for one document: 1.1 s for 30,000 sentences against 0.03 s once analysed, growing with the square of the corpus.
    Its pairs batches, planned on its sequences and neighbours as the planner guessed them before they were stored,
    read all of the job's rows for each batch's 7,000 (bench/mining_scale.py's corpus: 40,000 a batch, 40 batches).
    Autovacuum refreshes them too, but a minute or more later."""
    with connection.cursor() as cursor:
        for model in tables:
            cursor.execute(f"ANALYZE {table_name(model)}")
