"""Memory and speed of the app's mining jobs as the corpus grows (LHA or MUSS), on synthetic data.

    .venv/bin/python bench/mining_memory.py [--method lha|muss] [--sizes 300,1200,4000] [--sentences 10] [--dim 384] [--retrieval dense|hybrid]
        [--search pgvector,faiss]

LHA: for each size N it creates two corpora of N documents (a source and a perturbed "simplified"
copy) with ``--sentences`` sentences each and stores random unit sentence vectors directly
(no encoder: this measures the job, not MiniLM), then runs an LHA job in-process: prepare
(document vectors + HNSW index) and every shard, as the worker would.
MUSS: one corpus of N documents; prepare gets a stand-in encoder (a random topic vector per
document pair plus noise, so documents d and d + N/2 hold near-paraphrases) instead of MiniLM,
then every neighbours and pairs shard runs in-process. It prints, per N:
documents, sentences, prepare and shard seconds, documents/s, pairs found, and the peak of
the memory the job allocates in this process (tracemalloc: every Python and NumPy
allocation, reset before the job; faiss's own C++ memory is not in it), plus the process RSS before, at its peak during the job and after it
(RSS keeps memory freed earlier, so it only bounds from above; after the job, the worker's in-memory index of it is
let go of, ``alignment/mining/worker_index.py``). A bounded job keeps the
tracemalloc peak flat as N grows; PostgreSQL's own memory is not in these figures.
For MUSS a second line splits the time by step (``bench/_muss_phases.py``): prepare into sequence
building, encoding, storing the rows and the HNSW build; the neighbours phase's search; the pairs
phase's ACCESS attributes; and sequences/s of the shards alone and end to end (prepare + shards).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from _django import setup_django

os.environ.setdefault("DEBUG", "0")  # DEBUG keeps a log of every SQL query (capped at 9,000), as a worker in production does not
setup_django()

import numpy as np
from django.conf import settings
from django.db import transaction

from alignment.copying import copy_binary
from alignment.mining import service as mining
from alignment.mining.models import MiningShard
from alignment.models import Document, Encoder, Paragraph, Sentence, SentenceEmbedding
from alignment.services import corpus_get_or_create
from bench._django import bench_owner
from bench._memory import PeakRss
from bench._muss_phases import PhaseClock
from bench._standin import topic_encoder
from models_ml.mining.muss import access_attributes


def make_corpus(
    name: str, documents: int, sentences: int, vectors: np.ndarray, encoder: Encoder, owner, text: Callable[[int, int], str] | None = None
) -> object:
    """``documents`` documents of ``sentences`` sentences (``text(document, sentence)``), with ``vectors``
    (documents * sentences, d) stored as ``encoder``'s by binary COPY."""
    text = text or (lambda d, s: f"w{d}s{s} word{d % 97} term{s}")
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    for start in range(0, documents, 1000):
        with transaction.atomic():
            docs = Document.objects.bulk_create(
                Document(
                    corpus=corpus, external_id=f"{name}-{d}", level="adv", raw_text="x", content_hash=f"{name}{d}", text_hash=f"{name}{d}"
                )
                for d in range(start, min(start + 1000, documents))
            )
            paragraphs = Paragraph.objects.bulk_create(Paragraph(document=doc, index=0, char_start=0, char_end=1) for doc in docs)
            rows = Sentence.objects.bulk_create(
                Sentence(document=doc, paragraph=par, index=s, index_in_paragraph=s, text=text(d, s), char_start=0, char_end=1)
                for d, (doc, par) in enumerate(zip(docs, paragraphs), start=start)
                for s in range(sentences)
            )
            first = start * sentences
            copy_binary(
                SentenceEmbedding, ("sentence_id", "encoder_id", "vector", "created_at"), ("int8", "int8", "vector", "timestamptz"),
                ((row.pk, encoder.pk, vectors[first + k], docs[0].created_at) for k, row in enumerate(rows)),
            )  # fmt: skip
    return corpus


WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "this",
    "which",
    "are",
    "be",
    "an",
    "or",
    "had",
    "it",
    "not",
    "were",
    "but",
    "also",
    "have",
    "their",
    "one",
    "its",
    "new",
    "after",
    "first",
    "has",
    "been",
    "who",
    "two",
    "they",
    "more",
    "other",
    "when",
    "time",
    "into",
    "during",
    "only",
    "can",
    "over",
    "most",
    "used",
    "school",
    "city",
    "state",
    "world",
    "war",
    "area",
    "years",
    "part",
    "may",
    "later",
    "three",
    "under",
    "between",
    "many",
    "such",
    "film",
    "team",
    "season",
    "while",
    "river",
    "house",
    "family",
]


def demo_text(seed: int, variant: int) -> str:
    """A sentence of real English, 160-270 characters (two never fit one MUSS sequence of 300, so one sentence is one
    sequence as with WORDS): halves of demo-corpus sentences picked by ``seed``, joined; ``variant`` 1 is its paraphrase
    in the other document of a pair."""
    if not DEMO_SENTENCES:
        for path in sorted((Path(__file__).resolve().parents[1] / "alignment" / "demo_corpus").glob("*.txt")):
            DEMO_SENTENCES.extend(s.split() for s in re.split(r"(?<=[.!?])\s+", path.read_text(encoding="utf-8")) if len(s.split()) >= 8)
    rng = random.Random(seed)
    words: list[str] = []
    while len(" ".join(words)) < 160:
        first, second = rng.choice(DEMO_SENTENCES), rng.choice(DEMO_SENTENCES)
        words += first[: len(first) // 2] + second[len(second) // 2 :]
    while len(" ".join(words)) > 270:
        words.pop()
    if variant:  # a paraphrase, not a near-copy (MUSS drops those below 0.2 normalised edit distance): a third of its words
        other = rng.choice(DEMO_SENTENCES)  # replaced by another sentence's
        words = [other[i % len(other)] if i % 3 == 1 else word for i, word in enumerate(words)]
    return " ".join(words)


DEMO_SENTENCES: list[list[str]] = []


def make_muss_corpus(name: str, documents: int, sentences: int, owner, text: str = "words") -> object:
    """Documents d and d + N/2 share topics sentence by sentence; texts are short so one sentence is one sequence.
    ``text``: "words", 30 words drawn from WORDS' 74; "demo", real English recombined from the demo corpus, the two
    documents of a pair holding near-paraphrases (realistic character n-grams for hybrid retrieval)."""

    def sentence(d: int, s: int) -> str:
        if text == "demo":
            return demo_text((d % half) * sentences + s, int(d >= half))
        return " ".join(random.Random(d * sentences + s).choices(WORDS, k=30)) + "."

    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    half = max(documents // 2, 1)
    for start in range(0, documents, 500):
        with transaction.atomic():
            docs = Document.objects.bulk_create(
                Document(
                    corpus=corpus, external_id=f"{name}-{d}", level="adv", raw_text="x", content_hash=f"{name}{d}", text_hash=f"{name}{d}"
                )
                for d in range(start, min(start + 500, documents))
            )
            paragraphs = Paragraph.objects.bulk_create(Paragraph(document=doc, index=0, char_start=0, char_end=1) for doc in docs)
            Sentence.objects.bulk_create(
                Sentence(
                    document=doc,
                    paragraph=par,
                    index=s,
                    index_in_paragraph=s,
                    char_start=0,
                    char_end=1,
                    text=f"t{(d % half) * sentences + s}x " + sentence(d, s),
                )
                for d, (doc, par) in enumerate(zip(docs, paragraphs), start=start)
                for s in range(sentences)
            )
    return corpus


def setup_muss(
    size: int,
    sentences: int,
    owner,
    corpora: dict[int, object],
    retrieval: str = "dense",
    text: str = "words",
    encoder: str = "bench-topic",
) -> object:
    """A new MUSS job on the size's corpus (made once: a second search backend mines the same corpus anew); ``encoder``:
    the job's (the stand-in's name by default: the caller passes its ``encode`` to the prepare)."""
    if size not in corpora:
        corpora[size] = make_muss_corpus(f"muss{size}" + ("" if text == "words" else f"-{text}"), size, sentences, owner, text)
    config = {"encoder": encoder, "retrieval": retrieval}
    job = mining.mining_job_create(source_corpus=corpora[size], target_corpus=None, method="muss", config=config)[0]
    if job.status != "queued":  # mined before with the previous backend
        job.delete()
        job = mining.mining_job_create(source_corpus=corpora[size], target_corpus=None, method="muss", config=config)[0]
    return job


def setup_lha(size: int, sentences: int, dim: int, owner, rng, encoder, tag: str = "") -> object:
    count = size * sentences
    source_vectors = rng.normal(size=(count, dim)).astype(np.float32)
    target_vectors = source_vectors + 0.35 * rng.normal(size=source_vectors.shape).astype(np.float32)
    source_vectors /= np.linalg.norm(source_vectors, axis=1, keepdims=True)
    target_vectors /= np.linalg.norm(target_vectors, axis=1, keepdims=True)
    source = make_corpus(f"src{size}{tag}", size, sentences, source_vectors, encoder, owner)
    target = make_corpus(f"tgt{size}{tag}", size, sentences, target_vectors, encoder, owner)
    config = {"encoder": encoder.name, "k_documents": 1, "theta_d": 0.3, "k_sentences": 1, "theta_s": 0.5, "min_overlap": None}
    return mining.mining_job_create(source_corpus=source, target_corpus=target, config=config)[0]


def run_job(job, encode, on_step: Callable[[str], None] | None = None) -> tuple[float, float, float, dict[str, float]]:
    """Prepare, then every shard (a large MUSS job's encode shards, then its prepare again for the search index, then
    neighbours before pairs) as the workers would, one after another. ``on_step``: called with each step's phase
    ("prepare", "index", or the shard's phase) before it runs."""
    step = on_step or (lambda phase: None)
    started = time.perf_counter()
    step("prepare")
    mining.mining_job_prepare(job_id=job.pk, encode=encode)
    prepared = time.perf_counter()
    phases: dict[str, float] = {}
    while True:
        job.refresh_from_db()
        step_started = time.perf_counter()
        if job.status == "queued":  # the last encode shard handed the job back to its prepare: the search index
            step("index")
            mining.mining_job_prepare(job_id=job.pk, encode=encode)
            phases["index"] = phases.get("index", 0.0) + time.perf_counter() - step_started
            continue
        shard = MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("phase", "index").first()
        if shard is None or job.status != "running":
            break
        step(shard.phase)
        mining.mining_shard_execute(shard_id=shard.pk, encode=encode)
        phases[shard.phase] = phases.get(shard.phase, 0.0) + time.perf_counter() - step_started
    return started, prepared, time.perf_counter(), phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", choices=["lha", "muss"], default="lha")
    parser.add_argument("--sizes", default="300,1200,4000")
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--search", default="pgvector", help="MINING_SEARCH_BACKEND(s) to run in turn, e.g. pgvector,faiss")
    parser.add_argument("--retrieval", choices=["dense", "hybrid"], default="dense", help="MUSS: the job's retrieval")
    args = parser.parse_args()
    backends = args.search.split(",")
    if any(b not in ("pgvector", "faiss") for b in backends):
        parser.error("--search takes pgvector and/or faiss")
    owner = bench_owner()
    encoder, _ = Encoder.objects.get_or_create(name="bench-random", defaults={"dimensions": args.dim})
    rng = np.random.default_rng(0)
    vectors = "random unit sentence vectors" if args.method == "lha" else "stand-in encoder (topic vector + noise)"
    print(
        f"{args.method.upper()} mining job in-process, {args.sentences} sentences per document, {args.dim}-d {vectors}; RSS of this process"
    )
    print(
        f"{'search':>8} {'documents':>9} {'sentences':>9} | {'prepare s':>9} {'shards s':>8} {'docs/s':>7} {'pairs':>7} | "
        f"{'job peak alloc':>14} {'RSS before -> peak -> after':>28} | shard seconds by phase"
    )
    corpora: dict[int, object] = {}
    access_attributes("A warm-up pair.", "A pair to warm up.", "en")  # wordfreq's lists load once, not in the first job
    for size, backend in ((int(n), b) for n in args.sizes.split(",") for b in backends):
        settings.MINING_SEARCH_BACKEND = backend
        if args.method == "lha":
            job, encode = setup_lha(size, args.sentences, args.dim, owner, rng, encoder, f"-{backend}"), None
        else:
            job, encode = setup_muss(size, args.sentences, owner, corpora, args.retrieval), topic_encoder(args.dim)
        clock = PhaseClock()
        tracemalloc.start()
        tracemalloc.reset_peak()
        with PeakRss() as memory, clock:
            baseline = memory.peak
            started, prepared, finished, phases = run_job(job, encode and clock.encoder(encode))
        allocated_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        after = memory.process.memory_info().rss  # the job finished here: its in-memory index let go of
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        shard_seconds = finished - prepared
        print(
            f"{backend:>8} {size:>9,} {size * args.sentences:>9,} | {prepared - started:>9.1f} {shard_seconds:>8.1f} {size / shard_seconds:>7.1f} "
            f"{job.pairs_found:>7,} | {allocated_peak / 2**20:>10.1f} MiB {baseline / 2**20:>8.0f} -> {memory.peak / 2**20:.0f} -> {after / 2**20:.0f} MiB | "
            + ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in sorted(phases.items())),
            flush=True,
        )
        if args.method == "muss":
            print(clock.report(prepared - started, phases, job.documents_total // 2), flush=True)


if __name__ == "__main__":
    main()
