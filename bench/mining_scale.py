"""A MUSS job in the app beside the in-memory pipeline it persists, on the same corpus, in one run (issue 36 §1).

    .venv/bin/python bench/mining_scale.py [--sequences 30000,300000] [--sentences 10] [--dim 384] [--retrieval dense]
                                           [--workers 0] [--threads 0] [--reference-up-to 0]

For each size it builds the synthetic corpus of ``bench/mining_memory.py`` (documents d and d + N/2 hold
near-paraphrases; one sentence is one sequence; the stand-in encoder costs almost nothing, so only the pipeline is
timed), then runs:

app        the app's MUSS job in this process with the faiss search backend, as the workers would: prepare
           (sequences, vectors, rows), every neighbours shard, every pairs shard; seconds per phase;
in-memory  ``models_ml.mining.muss.mine_muss`` on the same documents with the same encoder (its vectors rounded to
           half precision, as the job stores them) and the **same search index** (``search=``: the faiss index the
           job builds, exact below 50,000 sequences and HNSW above, with the job's efSearch and threads), so a faster
           index is never mistaken for a faster pipeline.

It prints sequences/s of both, their ratio (the goal: the app at >= 0.5x), the pairs each found and how many they
share, the app's peak RSS (this process; PostgreSQL's own memory is not in it), the bytes a stored vector takes and,
for a job run in this process, the seconds Python's garbage collector ran during it and each phase's RSS when it began
and at its peak (MiB), so that what a phase adds is told from what an earlier one still holds.

``--workers N`` (N >= 1): the whole job runs in N ``procrastinate worker`` processes on the ``mining`` queue, its
prepare, its encode shards (a job of more than MINING_ENCODE_SHARD_SEQUENCES sequences is encoded by every worker at
once, alignment/mining/muss_encoding.py), the index, the neighbours and the pairs shards, each worker reading what the
others stored in PostgreSQL, as on N hosts, of ``--threads`` threads each; the seconds of each phase are printed, and
the peak RSS is the largest worker's. The workers load the stand-in encoder by its name (``bench/_standin_worker.py``),
so that its encoding spreads over them as the app's encoder's does. Run it with 1 and then 2 for the scale-out figure
(on 2 cores, ``--threads 1``: each worker stands for a one-core host). ``--threads`` (0: one per core) is also the
in-memory side's. ``--reference-up-to N``: sizes above N sequences run the app's job alone (the 1,000,000-sequence
line: time per phase and peak memory). ``--index ivf``: every job is searched by the IVF-SQ8 index
(MINING_FAISS_MAX_SEQUENCES = 1), the in-memory side by the same. ``--encoder app --workers N``: the job's encoder is
the app's (ENCODER_MODEL), the scale-out figure with a real encoder, where encoding is most of the job. ``--backend pgvector``: the job searches pgvector's HNSW index over its ``halfvec`` vectors (the default backend)
instead of faiss; the in-memory side keeps the faiss index, so the ratio then compares two indexes, and the pairs
shared say how far their neighbours agree. ``--text demo``: sentences of real English recombined from the demo corpus instead of 30 words drawn from 74 (run
``--retrieval dense`` and ``hybrid`` on it for the hybrid job's pace against the dense one's).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from _django import setup_django

os.environ.setdefault("DEBUG", "0")
setup_django()

import numpy as np
from django.conf import settings
from django.db.models import Max, Min

from alignment.mining.models import MinedPair as StoredPair
from alignment.mining.muss_service import muss_config
from alignment.mining.vectors import CHUNK as IVF_CHUNK
from alignment.models import Document, Sentence
from bench._django import bench_owner
from bench._memory import CollectorTime, PeakRss
from bench._workers import run_workers
from bench.mining_memory import run_job, setup_muss, topic_encoder
from models_ml.mining.ivf_index import IvfIndex
from models_ml.mining.muss import access_attributes, mine_muss
from models_ml.mining.types import MiningDocument
from models_ml.mining.vector_index import SELF_SEARCH_EXACT_BELOW, FaissIndex


def faiss_search(threads: int):
    """``search`` for mine_muss: the index the app's job builds over its vectors (vector_index.FaissIndex, same settings)."""

    def search(vectors: np.ndarray, k: int):
        ids = np.arange(len(vectors), dtype=np.int64)
        index = FaissIndex(vectors, ids, ef_search=int(settings.MINING_EF_SEARCH), threads=threads, exact_below=SELF_SEARCH_EXACT_BELOW)
        return index.search(vectors, k, exclude=ids)

    return search


def ivf_search(threads: int):
    """``search`` for mine_muss: the IVF-SQ8 index a job builds past MINING_FAISS_MAX_SEQUENCES (alignment/mining/
    ivf_search.py: the same cells, nprobe and training sample, candidates re-ranked by the exact cosine)."""

    def search(vectors: np.ndarray, k: int):
        n, cells = len(vectors), int(settings.MINING_IVF_CELLS) or None
        every = max(1, n // IvfIndex.sample_size(n, cells))
        index = IvfIndex(vectors[::every], n, cells=cells, nprobe=int(settings.MINING_IVF_NPROBE), threads=threads)
        for begin in range(0, n, IVF_CHUNK):
            index.add(vectors[begin : begin + IVF_CHUNK], np.arange(begin, min(begin + IVF_CHUNK, n)))
        return index.search(vectors, k, lambda wanted: vectors[wanted], exclude=np.arange(n))

    return search


def app_encode():
    """The app's encoder (ENCODER_MODEL, loaded on the first call) as the in-memory side's ``encode``."""
    from alignment.aligning.measures import app_encoder

    return lambda texts: app_encoder(settings.ENCODER_MODEL).encode(list(texts), batch_size=settings.ENCODER_BATCH_SIZE)


def as_stored(encode):
    """The encoder's vectors as the job reads them back: rounded to half precision (its ``halfvec`` column), then widened
    to unit float32 rows, so that both sides mine the same vectors (at 30,000 sequences the job's pairs from the halves
    and the in-memory side's from float32 differed in 19 of 30,700)."""

    def rounded(texts: list[str]) -> np.ndarray:
        vectors = encode(texts).astype(np.float16).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    return rounded


def in_memory(corpus, config, encode, threads: int, search) -> tuple[float, set]:
    """Seconds and pairs of mine_muss over the corpus's documents (read before the clock starts)."""
    documents = []
    for doc in Document.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True):
        documents.append(
            MiningDocument(str(doc), list(Sentence.objects.filter(document_id=doc).order_by("index").values_list("text", flat=True)))
        )
    started = time.perf_counter()
    found = {
        (int(p.source_doc), tuple(p.source), int(p.target_doc), tuple(p.target))
        for p in mine_muss(documents, encode=encode, config=config, search=search(threads))
    }
    return time.perf_counter() - started, found


def stored_pairs(job) -> set:
    rows = StoredPair.objects.filter(job=job).values_list(
        "source_document_id", "source_sentences", "target_document_id", "target_sentences"
    )
    return {(source, tuple(s), target, tuple(t)) for source, s, target, t in rows.iterator(chunk_size=5000)}


def vector_bytes(job) -> float:
    """Bytes a stored sequence vector takes in its table (pgvector's value with its header; halfvec: 2 a dimension)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT avg(pg_column_size(vector)) FROM alignment_miningsequence WHERE job_id = %s", [job.pk])
        return float(cursor.fetchone()[0] or 0)


def run_whole_job_in_workers(job, workers: int, threads: int, dimensions: int) -> tuple[float, float, float, dict[str, float], float]:
    """The whole job in ``workers`` worker processes, its prepare and encode shards included (MINING_PREPARE_QUEUE is
    "mining"), with its encoder, the stand-in's too (``bench/_standin_worker.py``); as ``run_job`` plus the largest
    worker's peak (MiB). Timed by the job's and its shards' own timestamps: from a worker picking up its prepare to
    its end, so the workers' start-up (a deployment's workers are running before a job comes) is printed beside it,
    not in it; "prepared" when the first neighbours shard starts."""
    launched = time.time()
    entry = str(Path(__file__).with_name("_standin_worker.py"))
    _, peaks = run_workers("mining", workers, job, threads, entry=entry, env={"BENCH_TOPIC_DIMENSIONS": str(dimensions)})
    job.refresh_from_db()
    started, finished = job.started_at.timestamp(), job.finished_at.timestamp()

    def span(phase: str) -> tuple[float, float] | None:  # (first start, last finish) of the phase's shards
        times = job.shards.filter(phase=phase).aggregate(first=Min("started_at"), last=Max("finished_at"))
        return (times["first"].timestamp(), times["last"].timestamp()) if times["first"] else None

    encode, neighbours = span("encode"), span("neighbours")
    prepared = neighbours[0] if neighbours else finished
    phases = {"start-up (not in the time)": started - launched, "neighbours": (neighbours or (prepared, prepared))[1] - prepared}
    phases["pairs"] = finished - (neighbours or (prepared, prepared))[1]
    if encode is not None:
        phases |= {"encode shards": encode[1] - started, "index": prepared - encode[1]}
    return started, prepared, finished, phases, max(peaks)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", default="30000", help="comma-separated sizes in sequences (= sentences)")
    parser.add_argument("--sentences", type=int, default=10, help="sentences per document")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--retrieval", choices=["dense", "hybrid"], default="dense")
    parser.add_argument("--workers", type=int, default=0, help="0: the job in this process; N: its shards in N worker processes")
    parser.add_argument("--threads", type=int, default=0, help="threads of each worker and of the in-memory side (0: one per core)")
    parser.add_argument("--text", choices=["words", "demo"], default="words", help="demo: real English (realistic n-grams)")
    parser.add_argument("--index", choices=["hnsw", "ivf"], default="hnsw", help="ivf: every job past MINING_FAISS_MAX_SEQUENCES")
    parser.add_argument("--reference-up-to", type=int, default=0, help="sizes above this run the app alone (0: none skipped)")
    parser.add_argument(
        "--encoder", choices=["stand-in", "app"], default="stand-in", help="app: ENCODER_MODEL, the whole job in the workers"
    )
    parser.add_argument(
        "--backend", choices=["faiss", "pgvector"], default="faiss", help="pgvector: the job searches its halfvec HNSW index"
    )
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.encoder == "app" and not args.workers:
        parser.error("--encoder app runs the whole job in worker processes: give --workers N")
    settings.MINING_SEARCH_BACKEND = os.environ["MINING_SEARCH_BACKEND"] = args.backend  # here and in the worker processes
    if args.index == "ivf":  # here and in the worker processes
        settings.MINING_FAISS_MAX_SEQUENCES = int(os.environ.setdefault("MINING_FAISS_MAX_SEQUENCES", "1"))
    settings.ENCODER_THREADS = args.threads
    settings.JOB_USER_CONCURRENCY = max(1, args.workers)  # the shards spread over as many lanes as workers
    threads = int(settings.ENCODER_THREADS) or (os.cpu_count() or 1)  # as search_backend.job_index gives its index
    owner = bench_owner()
    access_attributes("A warm-up pair.", "A pair to warm up.", "en")
    shown = f"IVF-SQ8, nprobe {settings.MINING_IVF_NPROBE}" if args.index == "ivf" else f"efSearch {settings.MINING_EF_SEARCH}"
    print(
        f"MUSS, {args.retrieval}, {args.backend} search for the job, faiss for the in-memory side ({shown}, {threads} threads), {args.encoder} encoder"
    )
    print(
        f"{'sequences':>10} | {'app s':>7} {'seq/s':>7} | {'memory s':>8} {'seq/s':>7} | {'ratio':>5} | {'pairs app':>9} {'memory':>7} {'shared':>7} | phases (app)"
    )
    corpora: dict[int, object] = {}
    for size in (int(n) for n in args.sequences.split(",")):
        documents = size // args.sentences
        encoder = settings.ENCODER_MODEL if args.encoder == "app" else "bench-topic"
        job = setup_muss(documents, args.sentences, owner, corpora, args.retrieval, args.text, encoder)
        encode = app_encode() if args.encoder == "app" else topic_encoder(args.dim)
        with PeakRss() as memory, CollectorTime() as collector:
            if args.workers:
                started, prepared, finished, phases, workers_peak = run_whole_job_in_workers(job, args.workers, args.threads, args.dim)
            else:
                started, prepared, finished, phases = run_job(job, encode, on_step=memory.phase)
        peak = max(memory.peak / 2**20, workers_peak) if args.workers else memory.peak / 2**20
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        app_seconds = finished - started
        app_found = stored_pairs(job)
        if args.reference_up_to and size > args.reference_up_to:
            memory_seconds, memory_found = float("nan"), set()
        else:
            search = ivf_search if args.index == "ivf" else faiss_search
            fresh = app_encode() if args.encoder == "app" else topic_encoder(args.dim)  # its own stand-in cache, as before
            memory_seconds, memory_found = in_memory(corpora[documents], muss_config(job.config), as_stored(fresh), threads, search)
        shown = ", ".join(f"{name} {seconds:.1f}" for name, seconds in [("prepare", prepared - started), *sorted(phases.items())])
        shown += f"; vectors {vector_bytes(job):.0f} B/sequence"
        if not args.workers:  # the job ran in this process: what its garbage collector took of it
            shown += f"; gc {collector.seconds:.1f} s ({collector.full} full passes)"
            shown += "; RSS by phase, at its start -> its peak: " + ", ".join(
                f"{name} {start / 2**20:.0f} -> {top / 2**20:.0f}" for name, (start, top) in memory.phases.items()
            )
        print(
            f"{size:>10,} | {app_seconds:>7.1f} {size / app_seconds:>7.0f} | {memory_seconds:>8.1f} {size / memory_seconds:>7.0f} | "
            f"{memory_seconds / app_seconds:>5.2f} | {len(app_found):>9,} {len(memory_found):>7,} {len(app_found & memory_found):>7,} | "
            f"{shown}; peak RSS {peak:.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
