"""A second corpus embedded under the encoder's HNSW index: the embedding run as it is now (the index dropped before a
large load and built again over every vector at its end) beside the same run loading into the index in place, as it
did before (``alignment/index_loading.py``), in one run on the same corpora.

    .venv/bin/python bench/index_loading.py [--sentences 30000] [--rounds 1]

Two corpora of ``--sentences`` sentences each (documents of 100), texts the benches' stand-in encoder reads
(``bench/_standin.py``: a topic's vector plus noise, 20 sentences a topic, so the vectors cluster as real ones do, and
encoding costs almost nothing: only the database's side is timed). The first corpus's vectors are stored and the
encoder's index built over them, as its embedding run leaves them. Then, each round, the second corpus's embedding run
(``embedding_run_execute`` in this process, unsharded, as a worker runs it):

now      the run drops the index (the second corpus adds at least ``INDEX_REBUILD_SHARE`` of what it holds), stores
         its vectors, and builds the index again over both corpora;
in place the same run with the share set out of reach: every vector goes into the index as it is stored.

Between the two the second corpus's vectors are deleted and the index is built again over the first corpus alone, and
the database is settled (``VACUUM (ANALYZE)``, ``CHECKPOINT``) outside the clock. It prints both runs' seconds and
sentences/s and their ratio. With the real encoder each run takes the encoder's time more; the seconds saved are
PostgreSQL's, on its own core, which the encoder's threads share on a small machine.

Figures: docs/benchmarks.md, "A second corpus under the index".
"""

from __future__ import annotations

import argparse
import os
import time

from _django import setup_django

os.environ.setdefault("DEBUG", "0")
setup_django()

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from alignment import index_loading, services
from alignment.models import Document, EmbeddingRun, Paragraph, Sentence, SentenceEmbedding
from bench._django import bench_owner, settle
from bench._standin import topic_encoder
from bench.mining_memory import make_corpus

DIMENSIONS = 384
PER_TOPIC = 20
PER_DOCUMENT = 100
ENCODER = "bench-topic"


class StandIn:
    """The stand-in with what an embedding run asks of an encoder."""

    dimensions = DIMENSIONS

    def __init__(self) -> None:
        self._encode = topic_encoder(DIMENSIONS)

    def encode(self, texts: list[str], batch_size: int = 0) -> np.ndarray:
        return self._encode(list(texts))


def text(corpus: int, document: int, sentence: int) -> str:
    number = document * PER_DOCUMENT + sentence
    return f"t{corpus * 1_000_000 + number // PER_TOPIC}x{corpus}d{document}s{sentence}"


def sentences_only(name: str, documents: int, corpus_number: int, owner):
    """A corpus of ``documents`` documents of PER_DOCUMENT sentences, with no vectors."""
    corpus, _ = services.corpus_get_or_create(name=name, language="en", owner=owner)
    with transaction.atomic():
        docs = Document.objects.bulk_create(
            Document(corpus=corpus, external_id=f"{name}-{d}", level="adv", raw_text="x", content_hash=f"{name}{d}", text_hash=f"{name}{d}")
            for d in range(documents)
        )
        paragraphs = Paragraph.objects.bulk_create(Paragraph(document=doc, index=0, char_start=0, char_end=1) for doc in docs)
        Sentence.objects.bulk_create(
            Sentence(document=doc, paragraph=par, index=s, index_in_paragraph=s, text=text(corpus_number, d, s), char_start=0, char_end=1)
            for d, (doc, par) in enumerate(zip(docs, paragraphs, strict=True))
            for s in range(PER_DOCUMENT)
        )
    return corpus


def index_over_first(encoder, second) -> None:
    """The state a second corpus's run starts from: none of its vectors, the index over the first corpus's alone."""
    SentenceEmbedding.objects.filter(sentence__document__corpus=second, encoder=encoder).delete()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {encoder.index_name}")
    services.encoder_index_ensure(encoder=encoder)
    settle()


def embed(corpus, share: float) -> float:
    """Seconds of the corpus's embedding run, with ``share`` as INDEX_REBUILD_SHARE."""
    index_loading.INDEX_REBUILD_SHARE = share
    run = services.embedding_run_create(corpus=corpus, encoder_name=ENCODER)
    started = time.perf_counter()
    run = services.embedding_run_execute(run_id=run.pk, load_encoder=lambda name: StandIn(), batch_size=settings.EMBEDDING_BATCH_SIZE)
    seconds = time.perf_counter() - started
    if run.status != EmbeddingRun.Status.SUCCEEDED:
        raise SystemExit(f"the embedding run ended {run.status}: {run.error}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=30_000, help="sentences in each corpus")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    settings.EMBEDDING_SHARD_SENTENCES = 10**9  # one unsharded run in this process, as a worker runs a small one
    owner, documents = bench_owner(), max(1, args.sentences // PER_DOCUMENT)
    encoder = services.encoder_get_or_create(name=ENCODER, dimensions=DIMENSIONS)
    texts = [text(1, d, s) for d in range(documents) for s in range(PER_DOCUMENT)]
    make_corpus("first", documents, PER_DOCUMENT, StandIn().encode(texts), encoder, owner, lambda d, s: text(1, d, s))
    second = sentences_only("second", documents, 2, owner)
    sentences = documents * PER_DOCUMENT
    share = index_loading.INDEX_REBUILD_SHARE
    print(f"A second corpus of {sentences:,} sentences embedded under an index over the first's {sentences:,} ({DIMENSIONS}-d stand-in)")
    print("round |   now s  sentences/s | in place s  sentences/s | in place / now")
    for round_number in range(1, args.rounds + 1):
        index_over_first(encoder, second)
        now = embed(second, share)
        index_over_first(encoder, second)
        in_place = embed(second, float("inf"))
        print(
            f"{round_number:5d} | {now:7.1f}  {sentences / now:11.0f} | {in_place:10.1f}  {sentences / in_place:11.0f} | {in_place / now:6.2f}x"
        )
    index_loading.INDEX_REBUILD_SHARE = share


if __name__ == "__main__":
    main()
