"""Import all of OneStopEnglish, then time the embedding job against a plain encode, per encoder backend.

    .venv/bin/python bench/onestopenglish.py [--backends torch,onnx-int8] [--limit N] [--batch-size 256] [--skip-embedding]

Prints: import time for the 567 documents (or the first N articles' levels); then, for each backend in
turn (``ENCODER_BACKEND``: torch, onnx, onnx-int8, openvino): its load time (the ONNX export, made once
into the run's ENCODER_CACHE_DIR, is counted here and nowhere else), sentences per second of a plain
``encoder.encode`` on every sentence, timed before and after the job, and of the embedding job (run
by a real Procrastinate worker process with that backend, writing to pgvector), and their ratio
(issue 17's bar: job / raw encode >= 0.8 for every backend). Each backend's job starts from an empty
vector table: the previous backend's vectors and HNSW index are dropped first.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from _backends import add_backends_argument, encoder_vectors_drop, load_backend, run_worker
from _django import bench_owner, require_shared, setup_django

from models_ml.similarity.encoders import ENCODE_BATCH_SIZE


def onestop_paths(folder: Path, options, *, levels: tuple[str, ...] = (), limit: int = 0) -> list[Path]:
    """OneStopEnglish files of ``levels`` (all when empty), of the first ``limit`` articles by name (all when 0)."""
    from alignment.importing.service import import_paths

    paths = [p for p in import_paths(folder, options) if not levels or p.stem.lower().endswith(tuple(f"-{level}" for level in levels))]
    if limit:
        articles = sorted({p.stem.rsplit("-", 1)[0] for p in paths})[:limit]
        paths = [p for p in paths if p.stem.rsplit("-", 1)[0] in articles]
    return paths


@dataclass
class BackendFigures:
    backend: str
    load_seconds: float  # model load, plus the ONNX export when the cache had none
    encode_before: float  # seconds of one plain encode of every sentence, before the job
    encode_after: float
    job_seconds: float  # started_at -> finished_at of the embedding run
    worker_wall: float  # the worker process, with Python, Django and model start-up

    def encode_seconds(self) -> float:
        return (self.encode_before + self.encode_after) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=256, help="sentences stored per transaction by the job")
    parser.add_argument("--encode-batch-size", type=int, default=ENCODE_BATCH_SIZE, help="sentences per forward pass, for both")
    parser.add_argument("--limit", type=int, default=0, help="only the first N articles, every level (0: all)")
    parser.add_argument("--skip-embedding", action="store_true")
    add_backends_argument(parser)
    args = parser.parse_args()
    folder = require_shared("onestopenglish")
    setup_django()

    from alignment import services
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.models import Document, DocumentPair, Paragraph, Sentence

    corpus, _ = services.corpus_get_or_create(name="OneStopEnglish", language="en", owner=bench_owner())
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    paths = onestop_paths(folder, options, limit=args.limit)
    start = time.perf_counter()
    report = corpus_import_files(corpus=corpus, files=((str(p.relative_to(folder)), p.read_bytes()) for p in paths), options=options)
    import_seconds = time.perf_counter() - start
    print(
        f"import: {len(paths)} files, {report.documents_created} documents, {Paragraph.objects.count()} paragraphs, "
        f"{report.sentences_created} sentences, {DocumentPair.objects.count()} pairs in {import_seconds:.1f} s "
        f"({report.documents_created / import_seconds:.1f} documents/s); errors: {len(report.errors)}; "
        f"control characters removed: {report.control_characters_removed}, quote/dash repaired: {report.punctuation_repaired}"
    )
    for failed in report.errors:
        print("  error:", failed.error)
    assert Document.objects.count() == report.documents_created
    if args.skip_embedding:
        return
    texts = list(Sentence.objects.order_by("pk").values_list("text", flat=True))
    figures = [_time_backend(backend, corpus, texts, args) for backend in args.backends]
    _print_table(figures, len(texts), args)


def _time_backend(backend: str, corpus, texts: list[str], args: argparse.Namespace) -> BackendFigures:
    """Plain encode, embedding job in a worker process, plain encode again; then drop the vectors."""
    from django.conf import settings

    from alignment import services

    encoder, load_seconds = load_backend(backend, settings.ENCODER_MODEL)
    print(f"{backend}: loaded in {load_seconds:.1f} s (with the ONNX export when the cache had none)", flush=True)
    encoder.encode(texts[:512], batch_size=args.encode_batch_size)  # warm-up: first calls pay one-off costs

    def time_plain_encode() -> float:
        start = time.perf_counter()
        encoder.encode(texts, batch_size=args.encode_batch_size)  # one call: each backend sorts by length itself
        return time.perf_counter() - start

    # The machine's speed drifts by 10-20% between minutes, so the plain encoder is
    # timed before and after the job and the job is compared with the mean.
    encode_before = time_plain_encode()
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    # The job runs where it runs in production: in a `manage.py procrastinate worker`
    # process. (Run on a thread of *this* process it would be ~15% slower for a reason
    # that is the benchmark's, not the job's: this main thread has its own OpenMP pool
    # from the plain encode above, and two pools share two cores.)
    worker_wall = run_worker(
        "embedding", backend, EMBEDDING_BATCH_SIZE=str(args.batch_size), ENCODER_BATCH_SIZE=str(args.encode_batch_size)
    )
    run.refresh_from_db()
    assert run.status == "succeeded" and run.embedded_sentences == len(texts), (run.status, run.error)
    encode_after = time_plain_encode()
    encoder_vectors_drop(settings.ENCODER_MODEL)
    figures = BackendFigures(
        backend, load_seconds, encode_before, encode_after, (run.finished_at - run.started_at).total_seconds(), worker_wall
    )
    print(
        f"{backend}: plain encode {len(texts) / encode_before:.0f} sentences/s before the job, {len(texts) / encode_after:.0f} after; "
        f"worker process {worker_wall:.1f} s, of which the job ran {figures.job_seconds:.1f} s "
        "(the rest: Python, Django and model start-up)",
        flush=True,
    )
    return figures


def _print_table(figures: list[BackendFigures], sentences: int, args: argparse.Namespace) -> None:
    print(
        f"\n{sentences} sentences; encode batch {args.encode_batch_size}; the job stores {args.batch_size} per transaction "
        "(pgvector binary writes, HNSW built at the end)"
    )
    print(f"{'backend':<10} {'load s':>7} {'encode/s':>9} {'job s':>7} {'job/s':>7} {'worker s':>9} {'job / encode':>12}")
    for row in figures:
        encode_rate, job_rate = sentences / row.encode_seconds(), sentences / row.job_seconds
        print(
            f"{row.backend:<10} {row.load_seconds:>7.1f} {encode_rate:>9.0f} {row.job_seconds:>7.1f} {job_rate:>7.0f} "
            f"{row.worker_wall:>9.1f} {job_rate / encode_rate:>12.2f}"
        )


if __name__ == "__main__":
    main()
