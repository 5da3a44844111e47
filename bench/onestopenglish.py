"""Import all of OneStopEnglish, then time the embedding job against plain ``model.encode``.

    .venv/bin/python bench/onestopenglish.py [--batch-size 256] [--skip-embedding]

Prints: import time for the 567 documents; sentences per second of the
embedding job (run by a real Procrastinate worker process, writing to pgvector)
and of ``model.encode`` on the same sentences, timed before and after the job;
and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from urllib.parse import quote

from _django import bench_owner, require_shared, setup_django


def _database_url() -> str:
    from django.db import connection

    params = connection.settings_dict
    host = quote(str(params["HOST"]), safe="") if str(params["HOST"]).startswith("/") else params["HOST"]
    port = f":{params['PORT']}" if params.get("PORT") else ""
    password = f":{quote(params['PASSWORD'])}" if params.get("PASSWORD") else ""
    return f"postgresql://{params['USER']}{password}@{host}{port}/{params['NAME']}"


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=256, help="sentences stored per transaction by the job")
    parser.add_argument("--encode-batch-size", type=int, default=32, help="sentences per forward pass, for both")
    parser.add_argument("--skip-embedding", action="store_true")
    args = parser.parse_args()
    folder = require_shared("onestopenglish")
    setup_django()

    from django.conf import settings

    from alignment import services
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files, import_paths
    from alignment.models import Document, DocumentPair, Paragraph, Sentence
    from models_ml.similarity.encoders import load_sentence_encoder

    corpus, _ = services.corpus_get_or_create(name="OneStopEnglish", language="en", owner=bench_owner())
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    paths = import_paths(folder, options)
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

    settings.EMBEDDING_BATCH_SIZE = args.batch_size
    settings.ENCODER_BATCH_SIZE = args.encode_batch_size
    texts = list(Sentence.objects.order_by("pk").values_list("text", flat=True))
    encoder = load_sentence_encoder(settings.ENCODER_MODEL)
    encoder.encode(texts[:512], batch_size=args.encode_batch_size)  # warm-up: first calls pay one-off costs

    def time_plain_encode() -> float:
        start = time.perf_counter()
        encoder.encode(texts, batch_size=args.encode_batch_size)  # one call: sentence-transformers sorts by length itself
        return time.perf_counter() - start

    # The machine's speed drifts by 10-20% between minutes, so the plain encoder is
    # timed before and after the job and the job is compared with the mean.
    encode_before = time_plain_encode()
    run = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    # The job runs where it runs in production: in a `manage.py procrastinate worker`
    # process. (Run on a thread of *this* process it would be ~15% slower for a reason
    # that is the benchmark's, not the job's: this main thread has its own OpenMP pool
    # from the plain encode above, and two pools share two cores.)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "procrastinate", "worker", "--queues", "embedding", "--one-shot"],
        env={
            **os.environ,
            "DATABASE_URL": _database_url(),
            "EMBEDDING_BATCH_SIZE": str(args.batch_size),
            "ENCODER_BATCH_SIZE": str(args.encode_batch_size),
        },
        check=True,
    )
    worker_wall = time.perf_counter() - start
    run.refresh_from_db()
    assert run.status == "succeeded" and run.embedded_sentences == len(texts), (run.status, run.error)
    job_seconds = (run.finished_at - run.started_at).total_seconds()
    encode_after = time_plain_encode()
    encode_seconds = (encode_before + encode_after) / 2
    print(f"model.encode before the job: {len(texts) / encode_before:.0f} sentences/s, after: {len(texts) / encode_after:.0f} sentences/s")
    print(
        f"worker process wall time {worker_wall:.1f} s, of which the job ran {job_seconds:.1f} s "
        "(the rest: Python, Django and model start-up)"
    )

    encode_rate = len(texts) / encode_seconds
    job_rate = len(texts) / job_seconds
    print(
        f"model.encode: {len(texts)} sentences in {encode_seconds:.1f} s = {encode_rate:.0f} sentences/s (batch {args.encode_batch_size})"
    )
    print(
        f"embedding job: {len(texts)} sentences in {job_seconds:.1f} s = {job_rate:.0f} sentences/s "
        f"(worker process, {args.batch_size} per transaction, pgvector writes, HNSW build)"
    )
    print(f"ratio job / encode: {job_rate / encode_rate:.2f}")


if __name__ == "__main__":
    main()
