"""An import's two jobs as it queues them, beside the same two jobs one after the other, on the same worker processes.

    .venv/bin/python bench/import_jobs.py [--pairs 300] [--workers 2] [--rounds 1] [--user]

An import queues an embedding run over its corpus and an alignment run over its new pairs at once
(``import_jobs_queue``). The bench imports --pairs document pairs (recombined from OneStopEnglish when
``../shared/data/onestopenglish`` is there, else from the demo corpus, as ``bench/corpus_scale.py`` does) twice, into
two corpora, and times on ``--workers`` Procrastinate worker processes (every queue, as ``scripts/run.sh`` runs them):

1. the import's way: both runs queued together, the workers started, until both have finished;
2. the best path on the same workers: the embedding run alone until it has finished, then the alignment run alone,
   every vector stored before it starts.

Printed per round: each way's wall time and pairs per second, their ratio, the alignment run's encoder seconds (the
sentences it encoded itself, having found no stored vector) and the workers' CPU seconds. ``--rounds N`` alternates
which way goes first. The jobs have no user, as the demo's and the commands' have none; with ``--user`` they are the
bench owner's, as a person's import from the browser is: they then run in that user's lane (``JOB_USER_CONCURRENCY``,
one by default), and the runs' shards also in up to ``JOB_SPARE_LANES`` spare lanes below everyone's priority.
Measured figures are in docs/benchmarks.md ("An import's embedding and alignment").
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import signal
import subprocess
import sys
import time

from _django import REPO_ROOT, bench_owner, database_url, setup_django

os.environ.setdefault("DEBUG", "0")


def import_corpus(name: str, files: list[tuple[str, bytes]], owner):
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.services import corpus_get_or_create

    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner)
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text", language="en"))
    if report.errors:
        raise SystemExit(f"import failed: {report.errors[0].error}")
    return corpus, report


def run_until_done(workers: int, steps: list) -> tuple[float, float]:
    """``workers`` worker processes on every queue, started once, while each of ``steps`` in turn queues its runs and
    they run until every one has finished; (wall from the workers' start, their CPU seconds)."""
    from django.conf import settings

    env = {
        **os.environ, "DATABASE_URL": database_url(), "ENCODER_CACHE_DIR": str(settings.ENCODER_CACHE_DIR), "LOG_LEVEL": "WARNING",
        "ENCODER_THREADS": str(max(1, (os.cpu_count() or 1) // workers)),
    }  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    command = [sys.executable, "manage.py", "procrastinate", "worker", "--concurrency", "1"]
    processes = [subprocess.Popen(command, env=env, cwd=REPO_ROOT) for _ in range(workers)]
    try:
        for step in steps:
            for run in step():
                while type(run).objects.filter(pk=run.pk, status__in=["queued", "running"]).exists():
                    if any(process.poll() is not None for process in processes):
                        raise SystemExit("a worker stopped while the jobs ran")
                    time.sleep(0.2)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
    wall = time.perf_counter() - started
    for process in processes:
        process.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def together(corpus, report, workers: int, user) -> tuple[float, float, int]:
    """Both runs queued as the import queues them, the workers started after, as a worker picks up an import's jobs."""
    from alignment.importing.workflow import import_jobs_queue

    jobs = import_jobs_queue(corpus=corpus, report=report, created_by=user)
    wall, cpu = run_until_done(workers, [lambda: [jobs.embedding_run, jobs.alignment_run]])
    return wall, cpu, jobs.alignment_run.pk


def one_after_the_other(corpus, workers: int, user) -> tuple[float, float, int]:
    """The embedding run queued first and the alignment run once it has finished, on the same workers."""
    from django.conf import settings

    from alignment.aligning.service import alignment_run_for_new_pairs
    from alignment.services import embedding_run_create

    alignment = []
    wall, cpu = run_until_done(
        workers,
        [
            lambda: [embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=user)],
            lambda: alignment.append(alignment_run_for_new_pairs(corpus=corpus, created_by=user)) or alignment,
        ],
    )
    return wall, cpu, alignment[0].pk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--user", action="store_true", help="the jobs are the bench owner's, as an import from the browser")
    args = parser.parse_args()
    setup_django()
    import corpus_scale
    from django.conf import settings

    from alignment.models import AlignmentRun, EmbeddingRun, Sentence
    from models_ml.similarity.encoders import load_sentence_encoder

    load_sentence_encoder(
        settings.ENCODER_MODEL, device="cpu", backend=settings.ENCODER_BACKEND, cache_dir=str(settings.ENCODER_CACHE_DIR), threads=1
    )  # exported (for ONNX) here first, so that the workers read the cache
    owner = bench_owner()
    files = corpus_scale.corpus_files(args.pairs * 2 * args.rounds, corpus_scale.source_articles("auto"))
    user = owner if args.user else None
    lanes = f"the jobs the user's (JOB_USER_CONCURRENCY {settings.JOB_USER_CONCURRENCY}, JOB_SPARE_LANES {settings.JOB_SPARE_LANES})"
    print(
        f"{args.pairs:,} pairs a corpus; {args.workers} worker process(es); {os.cpu_count()} cores; "
        f"{lanes if user else 'the jobs without a user'}",
        flush=True,
    )
    for number in range(args.rounds):
        chunk = files[2 * args.pairs * 2 * number : 2 * args.pairs * 2 * (number + 1)]
        queued, report = import_corpus(f"Queued {number}", chunk[: 2 * args.pairs], owner)
        sequential, _ = import_corpus(f"Sequential {number}", chunk[2 * args.pairs :], owner)
        ways = [
            ("import's way", functools.partial(together, queued, report, args.workers, user)),
            ("one after the other", functools.partial(one_after_the_other, sequential, args.workers, user)),
        ]
        results = {}
        for name, way in ways if number % 2 == 0 else ways[::-1]:
            wall, cpu, run_id = way()
            run = AlignmentRun.objects.get(pk=run_id)
            if run.status != "succeeded" or EmbeddingRun.objects.filter(status__in=["failed", "cancelled"]).exists():
                raise SystemExit(f"a job did not succeed: {run.status} {run.error}")
            results[name] = wall
            sentences = Sentence.objects.filter(document__corpus=run.corpus).count()
            print(
                f"round {number + 1} {name:<20} {wall:6.1f} s  {args.pairs / wall:5.2f} pairs/s  {sentences:,} sentences; "
                f"alignment's encoder {run.encoder_seconds:5.1f} s, job {(run.finished_at - run.started_at).total_seconds():5.1f} s; "
                f"workers' CPU {cpu:6.1f} s",
                flush=True,
            )
        ratio = results["one after the other"] / results["import's way"]
        print(f"round {number + 1} ratio (pairs/s, the import's way / one after the other): {ratio:.2f}x", flush=True)


if __name__ == "__main__":
    main()
