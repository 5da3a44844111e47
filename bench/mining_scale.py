"""A MUSS job in the app beside the in-memory pipeline it persists, on the same corpus, in one run (issue 36 §1).

    .venv/bin/python bench/mining_scale.py [--sequences 30000,300000] [--sentences 10] [--dim 384] [--retrieval dense]

For each size it builds the synthetic corpus of ``bench/mining_memory.py`` (documents d and d + N/2 hold
near-paraphrases; one sentence is one sequence; the stand-in encoder costs almost nothing, so only the pipeline is
timed), then runs:

app        the app's MUSS job in this process with the faiss search backend, as the workers would: prepare
           (sequences, vectors, rows), every neighbours shard, every pairs shard; seconds per phase;
in-memory  ``models_ml.mining.muss.mine_muss`` on the same documents with the same encoder and the **same search
           index** (``search=``: the faiss index the job builds, exact below 20,000 sequences and HNSW above, with
           the job's efSearch and threads), so a faster index is never mistaken for a faster pipeline.

It prints sequences/s of both, their ratio (the goal: the app at >= 0.5x), the pairs each found and how many they
share, and the app's peak RSS (this process; PostgreSQL's own memory is not in it).
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

from alignment.mining.models import MinedPair as StoredPair
from alignment.mining.muss_service import muss_config
from alignment.models import Document, Sentence
from bench._django import bench_owner
from bench._memory import PeakRss
from bench.mining_memory import run_job, setup_muss, topic_encoder
from models_ml.mining.muss import access_attributes, mine_muss
from models_ml.mining.types import MiningDocument
from models_ml.mining.vector_index import FaissIndex


def faiss_search(threads: int):
    """``search`` for mine_muss: the index the app's job builds over its vectors (vector_index.FaissIndex, same settings)."""

    def search(vectors: np.ndarray, k: int):
        ids = np.arange(len(vectors), dtype=np.int64)
        return FaissIndex(vectors, ids, ef_search=int(settings.MINING_EF_SEARCH), threads=threads).search(vectors, k, exclude=ids)

    return search


def in_memory(corpus, config, encode, threads: int) -> tuple[float, set]:
    """Seconds and pairs of mine_muss over the corpus's documents (read before the clock starts)."""
    documents = []
    for doc in Document.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True):
        documents.append(
            MiningDocument(str(doc), list(Sentence.objects.filter(document_id=doc).order_by("index").values_list("text", flat=True)))
        )
    started = time.perf_counter()
    found = {
        (int(p.source_doc), tuple(p.source), int(p.target_doc), tuple(p.target))
        for p in mine_muss(documents, encode=encode, config=config, search=faiss_search(threads))
    }
    return time.perf_counter() - started, found


def stored_pairs(job) -> set:
    rows = StoredPair.objects.filter(job=job).values_list(
        "source_document_id", "source_sentences", "target_document_id", "target_sentences"
    )
    return {(source, tuple(s), target, tuple(t)) for source, s, target, t in rows.iterator(chunk_size=5000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", default="30000", help="comma-separated sizes in sequences (= sentences)")
    parser.add_argument("--sentences", type=int, default=10, help="sentences per document")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--retrieval", choices=["dense", "hybrid"], default="dense")
    args = parser.parse_args()
    settings.MINING_SEARCH_BACKEND = "faiss"
    threads = int(settings.ENCODER_THREADS) or (os.cpu_count() or 1)  # as search_backend.job_index gives its index
    owner = bench_owner()
    access_attributes("A warm-up pair.", "A pair to warm up.", "en")
    print(f"MUSS, {args.retrieval}, faiss search for both (efSearch {settings.MINING_EF_SEARCH}, {threads} threads), stand-in encoder")
    print(
        f"{'sequences':>10} | {'app s':>7} {'seq/s':>7} | {'memory s':>8} {'seq/s':>7} | {'ratio':>5} | {'pairs app':>9} {'memory':>7} {'shared':>7} | phases (app)"
    )
    corpora: dict[int, object] = {}
    for size in (int(n) for n in args.sequences.split(",")):
        documents = size // args.sentences
        job = setup_muss(documents, args.sentences, owner, corpora, args.retrieval)
        encode = topic_encoder(args.dim)
        with PeakRss() as memory:
            started, prepared, finished, phases = run_job(job, encode)
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        app_seconds = finished - started
        config = muss_config(job.config)
        memory_seconds, memory_found = in_memory(corpora[documents], config, topic_encoder(args.dim), threads)
        app_found = stored_pairs(job)
        shown = ", ".join(f"{name} {seconds:.1f}" for name, seconds in [("prepare", prepared - started), *sorted(phases.items())])
        print(
            f"{size:>10,} | {app_seconds:>7.1f} {size / app_seconds:>7.0f} | {memory_seconds:>8.1f} {size / memory_seconds:>7.0f} | "
            f"{memory_seconds / app_seconds:>5.2f} | {len(app_found):>9,} {len(memory_found):>7,} {len(app_found & memory_found):>7,} | "
            f"{shown}; peak RSS {memory.peak / 2**20:.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
