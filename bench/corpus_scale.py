"""A corpus of --pairs document pairs from import to export through the app, each stage beside its DB-free path.

    .venv/bin/python bench/corpus_scale.py [--pairs 1000] [--workers 1] [--source auto|onestopenglish|demo]
                                           [--page-requests 20] [--sample 200] [--align-sample 1000] [--skip-pages]
                                           [--keep FOLDER] [--align-rounds 1]
                                           [--stop-after embedding|alignment]

The corpus is recombined from real text: OneStopEnglish's advanced and elementary articles when
``../shared/data/onestopenglish`` is there (else the demo corpus's five stories): document pair k is
article k mod A with one of its paragraphs left out of both versions (paragraph k div A), so every
document is new to the import's content hash while sentence and paragraph lengths, the share of
simple sentences with a partner, splits and merges stay the corpus's own. Everything goes to a
throw-away embedded database and temporary folders (``--keep FOLDER`` keeps the database there, stopped, to look
into afterwards with ``STATE_DIR=FOLDER``); nothing is written into the repository.

Stages, each timed on the app's own path and, in the same run on the same data, on the DB-free path:
1. import: ``corpus_import_files`` (what the import job and ``manage.py import_corpus`` run) on every
   file at once, vs reading and sentence-splitting the same files in memory in this process (``parse_file``)
   - documents/s;
2. embedding: the embedding job run by ``--workers`` Procrastinate worker processes, vs the same
   encoder (same backend) on --sample pairs' sentences in this process - sentences/s;
3. alignment with the default model: the alignment job on the same workers, vs ``Aligner.align``
   (what ``python -m models_ml align`` runs) on the first --align-sample pairs read into memory first (every
   pair of a 1,000-pair corpus: the job's own data; 200 pairs, about 4 s, moved by a third in one noisy
   minute) - pairs/s. ``--align-rounds N``: N jobs (each a new run over the corpus) and N DB-free runs, alternated,
   PostgreSQL's background work settled before each (``_django.settle``), each round's row and then the median ratio: one
   round's ratio moved from 0.65x to 0.81x between two runs minutes apart;
4. an annotation project over every pair, two annotators assigned each pair (``project_create``,
   ``assignments_distribute``); then simulated annotation, written in bulk: both annotators answer
   every suggestion of every pair, one of them says "not aligned" to every link of every tenth pair
   (left for adjudication), and the other pairs are verified; then ANALYZE, as autovacuum would after such a load;
5. pages: every page of tests/test_page_scale.py, ``--page-requests`` GETs each as its user, with a
   real HTTP client against gunicorn as ``scripts/run.sh`` starts it (DEBUG off) - p50 / p95 ms;
6. export of every format (``export_write``, what the export job runs) vs the same writers fed the
   same pairs already read into memory - pairs/s.
Also printed: the database's size per sentence, each worker process's peak resident memory
(``wait4``'s ru_maxrss), and the CPU seconds PostgreSQL spent during each alignment job (the processes of the
server on this machine, read from ``/proc``: what one database host must supply per pair, whatever the number of
workers). Issue 34's goals on 2 cores: import >= 50 documents/s; embedding and alignment jobs >= 0.8x the DB-free
path; export >= 0.8x; worker memory flat in the corpus size (10x the pairs, < 1.5x the peak); every page p95 <=
300 ms at 10,000 pairs.

Measured figures are in docs/benchmarks.md ("Corpus scale").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from _django import REPO_ROOT, SHARED_DATA, bench_owner, cpu_times, postgres_cpu_seconds, settle, setup_django, steal_share
from _workers import run_workers

os.environ.setdefault("DEBUG", "0")  # DEBUG keeps a log of every SQL query; production does not
PASSWORD = "scale-pass-123"


def source_articles(source: str) -> list[tuple[list[str], list[str]]]:
    """(complex paragraphs, simple paragraphs) per article: OneStopEnglish adv/ele, or the demo corpus's stories."""
    folder = SHARED_DATA / "onestopenglish"
    if source == "onestopenglish" or (source == "auto" and folder.is_dir()):
        articles = []
        for adv in sorted((folder / "adv").glob("*-adv.txt")):
            ele = folder / "ele" / adv.name.replace("-adv.txt", "-ele.txt")
            if ele.is_file():
                articles.append(tuple(_paragraphs(p.read_bytes().decode("utf-8-sig", errors="replace"), "\n") for p in (adv, ele)))
        return articles
    demo = REPO_ROOT / "alignment" / "demo_corpus"
    return [
        (_paragraphs(adv.read_text(), "\n\n"), _paragraphs((demo / adv.name.replace("-adv", "-ele")).read_text(), "\n\n"))
        for adv in sorted(demo.glob("*-adv.txt"))
        if (demo / adv.name.replace("-adv", "-ele")).is_file()
    ]


def _paragraphs(text: str, separator: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split(separator) if p.strip() and not p.strip().startswith("#")]


def corpus_files(pairs: int, articles: list[tuple[list[str], list[str]]]) -> list[tuple[str, bytes]]:
    """Pair k: article k mod A without its paragraph k div A (both versions), as NAME-adv.txt / NAME-ele.txt."""
    files = []
    for k in range(pairs):
        complex_paragraphs, simple_paragraphs = articles[k % len(articles)]
        variant = k // len(articles)
        for level, paragraphs in (("adv", complex_paragraphs), ("ele", simple_paragraphs)):
            kept = [p for i, p in enumerate(paragraphs) if len(paragraphs) < 2 or i != variant % len(paragraphs)]
            if variant >= len(paragraphs):  # more variants than paragraphs: drop two, so the text stays new
                kept = [
                    p
                    for i, p in enumerate(paragraphs)
                    if i not in (variant % len(paragraphs), (variant // len(paragraphs)) % len(paragraphs))
                ]
            files.append((f"P{k:05d}-{level}.txt", ("\n\n".join(kept) + f"\n\nVariant {k}.\n").encode()))
    return files


def _rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("nan")


def _row(stage: str, app: float, reference: float, unit: str, note: str = "") -> None:
    ratio = app / reference if reference else float("nan")
    print(f"{stage:<12} {app:>12,.1f} {reference:>14,.1f}  {unit:<13} {ratio:>6.2f}x  {note}", flush=True)


def stage_import(owner, files: list[tuple[str, bytes]]):
    from django.conf import settings

    from alignment.importing.parsing import parse_file
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files, split_limits
    from alignment.services import corpus_get_or_create

    options = ImportOptions(format="text", language="en")
    corpus, _ = corpus_get_or_create(name="Scale", language="en", owner=owner)
    started = time.perf_counter()
    report = corpus_import_files(corpus=corpus, files=files, options=options)  # one import of every file, as the job runs it
    if report.errors:
        raise SystemExit(f"import failed: {report.errors[0].error}")
    app = time.perf_counter() - started
    limits = split_limits()
    started = time.perf_counter()
    for name, data in files:
        parse_file(name, data, options, limits)
    reference = time.perf_counter() - started
    note = f"{len(files):,} documents in {app:.0f} s, {settings.IMPORT_SPLIT_PROCESSES} splitting process(es)"
    _row("import", _rate(len(files), app), _rate(len(files), reference), "documents/s", note)
    return corpus


def stage_embedding(corpus, owner, args, sample_pairs) -> list[float]:
    from django.conf import settings

    from alignment.models import EmbeddingRun, Sentence
    from alignment.services import embedding_run_create
    from models_ml.similarity.encoders import load_sentence_encoder

    encoder = load_sentence_encoder(
        settings.ENCODER_MODEL,
        device="cpu",
        backend=settings.ENCODER_BACKEND,
        cache_dir=str(settings.ENCODER_CACHE_DIR),
        threads=args.threads,
    )  # fmt: skip; loaded (and exported, for ONNX) here first, so the workers read the cache
    run = embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL, created_by=owner)
    wall, peaks = run_workers("embedding", args.workers, run, args.threads)
    run = EmbeddingRun.objects.get(pk=run.pk)
    if run.status != "succeeded":
        raise SystemExit(f"the embedding run ended {run.status}: {run.error}")
    sentences = Sentence.objects.filter(document__corpus=corpus).count()
    job = (run.finished_at - run.started_at).total_seconds()
    texts = list(Sentence.objects.filter(document__pairs_as_simple__in=sample_pairs).values_list("text", flat=True)) + list(
        Sentence.objects.filter(document__pairs_as_complex__in=sample_pairs).values_list("text", flat=True)
    )
    started = time.perf_counter()
    encoder.encode(texts, batch_size=settings.ENCODER_BATCH_SIZE)
    reference = time.perf_counter() - started
    _row(
        "embedding",
        _rate(sentences, job),
        _rate(len(texts), reference),
        "sentences/s",
        f"{sentences:,} sentences; job {job:.0f} s, workers' wall {wall:.0f} s",
    )
    return peaks


def stage_alignment(corpus, owner, args):
    """The alignment job beside ``Aligner.align``; with ``--align-rounds N`` N of each alternated, PostgreSQL settled
    before each, and the median ratio. The first run is kept for the later stages; the others are deleted, so that the
    database's size counts one run."""
    from django.conf import settings

    from alignment.aligning.reading import side_sentences
    from alignment.aligning.service import aligner_from_run_config, alignment_run_create
    from alignment.models import AlignmentRun

    kept, peaks, sides, ratios, aligner = None, [], [], [], None
    for _ in range(args.align_rounds):
        if args.align_rounds > 1:
            settle()
        run = alignment_run_create(corpus=corpus, model_dir=settings.ALIGNER_MODEL_DIR, created_by=owner)
        database_before, cpu_before = postgres_cpu_seconds(), cpu_times()
        _, round_peaks = run_workers("alignment", args.workers, run, args.threads)
        database, steal = _cpu_since(database_before), steal_share(cpu_before)
        run = AlignmentRun.objects.get(pk=run.pk)
        if run.status != "succeeded":
            raise SystemExit(f"the alignment run ended {run.status}: {run.error}")
        job = (run.finished_at - run.started_at).total_seconds()
        aligner = aligner or aligner_from_run_config(run.config)  # every round's run has the same config
        sides = sides or [
            (side_sentences(p.simple_document_id, "", vectors=False), side_sentences(p.complex_document_id, "", vectors=False))
            for p in corpus.pairs.order_by("pk")[: args.align_sample]
        ]
        if args.align_rounds > 1:
            settle()
        started, cpu_before = time.perf_counter(), cpu_times()
        for simple, complex_side in sides:
            aligner.align(complex_side.texts, simple.texts, complex_side.paragraphs, simple.paragraphs)
        reference, reference_steal = time.perf_counter() - started, steal_share(cpu_before)
        note = (
            f"{run.pairs_done:,} pairs, {run.sentences_done:,} sentences; job {job:.0f} s (measures {run.measure_seconds:.0f} s, "
            f"CRF {run.aligner_seconds:.0f} s, busy {run.busy_seconds:.0f} s), {len(run.measures)} measures vs the model's one"
            f"{database}{_steal(steal, reference_steal)}"
        )
        _row("alignment", _rate(run.pairs_done, job), _rate(len(sides), reference), "pairs/s", note)
        ratios.append(_rate(run.pairs_done, job) / _rate(len(sides), reference))
        if kept is None:
            kept, peaks = run, round_peaks
        else:
            run.delete()
    if args.align_rounds > 1:
        print(
            f"{'':<12} alignment, median of {args.align_rounds} rounds: {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        )
    return kept, peaks


def stage_project(corpus, run, owner):
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from alignment.models import CandidateAlignment
    from annotation import services
    from annotation.labels import assignments_recount
    from annotation.models import Assignment, LabelEvent, PairVerification

    users = {name: get_user_model().objects.create_user(name, password=PASSWORD) for name in ("anna", "ben", "viera")}
    owner.set_password(PASSWORD)
    owner.save()
    started = time.perf_counter()
    project = services.project_create(name="Scale project", corpus=corpus, created_by=owner, suggestion_run=run)
    services.membership_set(project=project, user=users["anna"], role="annotator")
    services.membership_set(project=project, user=users["ben"], role="annotator")
    services.membership_set(project=project, user=users["viera"], role="viewer")
    services.assignments_distribute(project=project)
    made = time.perf_counter() - started
    started = time.perf_counter()
    pair_ids = list(project.pairs.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pair_ids), 500):
        chunk = pair_ids[start : start + 500]
        rows = CandidateAlignment.objects.filter(run=run, pair_id__in=chunk).values_list(
            "pair_id", "simple_sentence_id", "complex_sentence_id", "label"
        )
        events, disputed = [], set()
        for pair_id, simple, complex_id, label in rows:
            for name in ("anna", "ben"):
                said = label
                if name == "ben" and pair_id % 10 == 0 and label != "not_aligned":  # ben disagrees on every tenth pair's links
                    said, _ = "not_aligned", disputed.add(pair_id)
                events.append(LabelEvent(project=project, pair_id=pair_id, annotator=users[name], simple_sentence_id=simple,
                                         complex_sentence_id=complex_id, new_label=said, source=LabelEvent.Source.HUMAN))  # fmt: skip
        with transaction.atomic():
            LabelEvent.objects.bulk_create(events, batch_size=5000)
            Assignment.objects.filter(project=project, pair_id__in=chunk).update(completed_at=project.created_at)
            assignments_recount(project, pair_ids=chunk)  # what every label save keeps
            PairVerification.objects.bulk_create(  # the pairs a reviewer could verify: nothing left to adjudicate
                PairVerification(project=project, pair_id=p, verified=True, by=owner) for p in chunk if p not in disputed
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # what autovacuum does within a minute of such a load: the planner's statistics
    labels = LabelEvent.objects.filter(project=project).count()
    print(
        f"{'project':<12} {len(pair_ids):,} pairs, 2 annotators each, made in {made:.1f} s; {labels:,} simulated labels written in bulk in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return project, users


def stage_pages(world, args) -> None:
    from _pages_http import pages_over_http

    pages_over_http(world, lambda persona: PASSWORD, args.page_requests)


def stage_export(project) -> None:
    from annotation.export import service
    from annotation.export.service import export_options_clean, export_write

    options = export_options_clean(include_majority=True)
    app_root = Path(tempfile.mkdtemp(prefix="corpus-scale-export-"))
    started = time.perf_counter()
    export_write(project=project, options=options, root=app_root)
    app = time.perf_counter() - started
    pair_ids = service.candidate_pair_ids(project, include_majority=True)
    in_memory = list(service.pair_exports(project, pair_ids, include_majority=True))
    original = service.pair_exports
    service.pair_exports = lambda *a, **k: iter(in_memory)
    memory_root = Path(tempfile.mkdtemp(prefix="corpus-scale-export-memory-"))
    try:
        started = time.perf_counter()
        export_write(project=project, options=options, root=memory_root)
        reference = time.perf_counter() - started
    finally:
        service.pair_exports = original
    size = sum(p.stat().st_size for p in app_root.rglob("*") if p.is_file())
    _row(
        "export",
        _rate(len(pair_ids), app),
        _rate(len(pair_ids), reference),
        "pairs/s",
        f"every format, {size / 2**20:.0f} MB with the archive",
    )
    shutil.rmtree(app_root, ignore_errors=True)
    shutil.rmtree(memory_root, ignore_errors=True)


def _steal(job: float | None, reference: float | None) -> str:
    """``"; CPU steal N % (job), M % (reference)"``: what the hypervisor took of this VM's CPUs meanwhile; "" where unread."""
    if job is None or reference is None:
        return ""
    return f"; CPU steal {100 * job:.1f} % (job), {100 * reference:.1f} % (reference)"


def _cpu_since(before: float | None) -> str:
    """``"; PostgreSQL N s of CPU"`` since ``before`` (:func:`postgres_cpu_seconds`), or "" where it cannot be read."""
    after = postgres_cpu_seconds()
    return f"; PostgreSQL {after - before:.1f} s of CPU" if before is not None and after is not None else ""


def _peaks(peaks: list[float]) -> str:
    return ", ".join(f"{peak:.0f}" for peak in peaks)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1, help="worker processes for the embedding and alignment jobs")
    parser.add_argument("--threads", type=int, default=0, help="ENCODER_THREADS per worker (default: cores / workers)")
    parser.add_argument("--source", choices=["auto", "onestopenglish", "demo"], default="auto")
    parser.add_argument("--sample", type=int, default=200, help="pairs the DB-free encoder runs on")
    parser.add_argument("--align-sample", type=int, default=1000, help="pairs the DB-free aligner runs on")
    parser.add_argument(
        "--align-rounds", type=int, default=1, help="the alignment job and the DB-free aligner this many times each, alternated"
    )
    parser.add_argument("--page-requests", type=int, default=20)
    parser.add_argument("--skip-pages", action="store_true")
    parser.add_argument(
        "--stop-after", choices=["embedding", "alignment"], default="", help="stop after this stage (a long corpus's job stages alone)"
    )
    parser.add_argument("--keep", default="", metavar="FOLDER", help="keep the database in FOLDER (a new one) to look into afterwards")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    args.threads = args.threads or max(1, (os.cpu_count() or 1) // args.workers)
    import torch

    torch.set_num_threads(args.threads)  # the DB-free paths run on one worker's threads
    bench_started = time.perf_counter()
    if args.align_rounds < 1:
        parser.error("--align-rounds must be at least 1")
    if args.keep and Path(args.keep).exists():
        parser.error(f"--keep {args.keep}: the folder exists; name a new one")
    setup_django(keep=args.keep)
    from django.db import connection

    from alignment.models import Sentence

    articles = source_articles(args.source)
    files = corpus_files(args.pairs, articles)
    print(
        f"{args.pairs:,} document pairs from {len(articles)} articles ({args.source}); {os.cpu_count()} cores; {args.workers} worker process(es) of {args.threads} thread(s)\n"
    )
    print(f"{'stage':<12} {'app':>12} {'DB-free path':>14}  {'unit':<13} {'ratio':>7}")
    owner = bench_owner()
    corpus = stage_import(owner, files)
    del files
    sample_pairs = list(corpus.pairs.order_by("pk")[: args.sample])
    embedding_peaks = stage_embedding(corpus, owner, args, sample_pairs)
    alignment_peaks: list[float] = []
    if args.stop_after != "embedding":
        run, alignment_peaks = stage_alignment(corpus, owner, args)
    if args.stop_after:
        print(f"\nworker peak RSS: embedding {_peaks(embedding_peaks)} MB; alignment {_peaks(alignment_peaks) or '-'} MB")
        print(f"stopped after {args.stop_after} (--stop-after); whole bench: {time.perf_counter() - bench_started:.0f} s")
        return
    project, users = stage_project(corpus, run, owner)
    stage_export(project)
    sentences = Sentence.objects.count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
    print(
        f"\ndatabase: {size / 2**20:,.0f} MB for {sentences:,} sentences = {size / sentences / 1024:.1f} kB per sentence (vectors, candidates, labels, indexes)"
    )
    print(f"worker peak RSS: embedding {_peaks(embedding_peaks)} MB; alignment {_peaks(alignment_peaks)} MB")
    if not args.skip_pages:
        world = SimpleNamespace(
            owner=owner, **users, corpus=corpus, run=run, project=project, first_pair=project.pairs.order_by("pk").first()
        )
        stage_pages(world, args)
    print(f"\nwhole bench: {time.perf_counter() - bench_started:.0f} s")


if __name__ == "__main__":
    main()
