"""Time and memory of a gold dataset export as the project grows, on a synthetic project.

    .venv/bin/python bench/export_scale.py [--labels 2000,20000,100000] [--sentences 12] [--annotators 1]
                                           [--formats tsv,jsonl,csv,parquet,simplification]

For each size it builds (with bulk_create, no services) a corpus of document pairs of
``--sentences`` complex and simple sentences in two paragraphs each, one project over them
with ``--annotators`` annotators who all labelled every pair (simple k ~ complex k aligned,
simple k ~ complex k+1 not aligned, so ``2 * sentences - 1`` labelled sentence pairs per
document pair) and marked it done, and verifies every pair; then it runs the export in-process
(:func:`annotation.export.service.export_write`, what the job runs) twice:

- timed, with the process RSS sampled every 50 ms (RSS keeps memory freed earlier, so it
  only bounds from above);
- under tracemalloc, for the peak of what the export allocates in this process (every
  Python allocation, reset before the export; slower, so its time is not reported).

A streaming export keeps the tracemalloc peak far below the size of its files as the project
grows. PostgreSQL's own memory is not in these figures, nor is Arrow's (the buffered Parquet rows).

Measured (embedded PostgreSQL, 12 x 12 sentences, 1 annotator, every format, a 2-core machine shared with other work):
    labels 23,000 (1,000 pairs): 5.4 s (4,227 labels/s), 57 MB of files, peak alloc 4.8 MB, RSS 476 -> 514 MB
    labels 100,004 (4,348 pairs): 25.0 s (3,993 labels/s), 252 MB of files, peak alloc 5.5 MB, RSS 503 -> 516 MB
    (another run, under more load: 100,004 labels 37.5 s, peak alloc 5.3 MB)
Before issue 17 (about 7 queries per document pair, BLEU and GLEU each tokenizing both sides): 23,000 labels 16.4 s,
100,004 labels 71.6 s (59.5 s on a quiet machine). Old and new code one after the other in one process on the same
100k project, so under the same load: 104.1 s -> 23.4 s, byte-identical files.
Memory is bounded: selection reads a page of PAGE_PAIRS document pairs at a time; the writers hold one document pair (plus at most ROW_GROUP_ROWS Parquet rows per split, kept
as Arrow record batches); the dataset card keeps running counts (agreement from per-annotator-pair confusion
matrices and coincidence sums, see annotation/export/agreement_counts.py) and has PostgreSQL count the unique
sentences (a temporary table of digests); sacrebleu's tokenizer caches are emptied after each pair. What still
grows is a few dozen bytes per document pair (the pair ids and their splits).
Before (the card kept every rating and a digest per unique sentence, sacrebleu's caches filled up, Parquet rows
were buffered as Python objects): 23,000 labels peak alloc 12.6 MB; 100,004 labels 80.9 MB, RSS 534 -> 586 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

from _django import setup_django

os.environ.setdefault("DEBUG", "0")  # DEBUG keeps a log of every SQL query, as a worker in production does not
setup_django()

from django.contrib.auth import get_user_model
from django.db import transaction

from alignment.models import Document, DocumentPair, Paragraph, Sentence
from alignment.services import corpus_get_or_create
from annotation.export.service import export_options_clean, export_write
from annotation.models import (
    AnnotationProject,
    Assignment,
    LabelEvent,
    PairVerification,
    ProjectMembership,
)
from bench._django import bench_owner
from bench._memory import PeakRss

WORDS = [
    "the",
    "city",
    "council",
    "new",
    "tram",
    "line",
    "harbour",
    "university",
    "spring",
    "years",
    "residents",
    "cost",
    "euros",
    "high",
    "critics",
    "decision",
]


def _text(pair: int, side: str, index: int) -> str:
    words = [WORDS[(pair * 7 + index * 3 + k) % len(WORDS)] for k in range(6 if side == "s" else 12)]
    return f"{side.upper()}{pair} sentence {index}: " + " ".join(words) + "."


def _document(corpus, pair: int, level: str, side: str, sentences: int) -> tuple[Document, list[Paragraph], list[Sentence]]:
    texts = [_text(pair, side, i) for i in range(sentences)]
    document = Document(
        corpus=corpus, external_id=f"article-{pair}", level=level, raw_text=" ".join(texts),
        content_hash=f"{pair}-{level}", text_hash=f"{pair}-{level}",
    )  # fmt: skip
    half = sentences // 2
    paragraphs = [Paragraph(document=document, index=p, char_start=0, char_end=1) for p in range(2)]
    rows = [
        Sentence(document=document, paragraph=paragraphs[0 if i < half else 1], index=i, index_in_paragraph=i if i < half else i - half,
                 text=text, char_start=i, char_end=i + 1)
        for i, text in enumerate(texts)
    ]  # fmt: skip
    return document, paragraphs, rows


def build_project(name: str, labels: int, sentences: int, annotators: int) -> AnnotationProject:
    owner = bench_owner()
    corpus, _ = corpus_get_or_create(name=name, language="en", owner=owner, level_order=["adv", "ele"])
    users = [get_user_model().objects.create_user(f"{name}-annotator-{k}") for k in range(annotators)]
    per_pair = 2 * sentences - 1
    pairs_needed = -(-labels // per_pair)
    project = AnnotationProject.objects.create(name=name, corpus=corpus, overlap=annotators, created_by=owner)
    ProjectMembership.objects.bulk_create(
        [ProjectMembership(project=project, user=owner, role="manager")]
        + [ProjectMembership(project=project, user=user, role="annotator") for user in users]
    )
    for start in range(0, pairs_needed, 250):
        with transaction.atomic():
            built = [(_document(corpus, p, "adv", "c", sentences), _document(corpus, p, "ele", "s", sentences))
                     for p in range(start, min(start + 250, pairs_needed))]  # fmt: skip
            Document.objects.bulk_create([side[0] for pair in built for side in pair])
            Paragraph.objects.bulk_create([p for pair in built for side in pair for p in side[1]])
            for pair in built:
                for side in pair:
                    for row in side[2]:
                        row.document_id, row.paragraph_id = row.document.pk, row.paragraph.pk
            Sentence.objects.bulk_create([row for pair in built for side in pair for row in side[2]], batch_size=5000)
            document_pairs = DocumentPair.objects.bulk_create(
                DocumentPair(corpus=corpus, complex_document=complex_[0], simple_document=simple[0]) for complex_, simple in built
            )
            project.pairs.add(*document_pairs)
            Assignment.objects.bulk_create(
                Assignment(project=project, pair=pair, annotator=user, completed_at=pair.created_at)
                for pair in document_pairs
                for user in users
            )
            events = []
            for pair, (complex_, simple) in zip(document_pairs, built):
                for k in range(sentences):
                    links = [(k, k, "aligned")] + ([(k, k + 1, "not_aligned")] if k + 1 < sentences else [])
                    for user in users:
                        events += [
                            LabelEvent(project=project, pair=pair, annotator=user, simple_sentence=simple[2][s],
                                       complex_sentence=complex_[2][c], new_label=label, source=LabelEvent.Source.HUMAN)
                            for s, c, label in links
                        ]  # fmt: skip
            LabelEvent.objects.bulk_create(events, batch_size=5000)
            PairVerification.objects.bulk_create(
                PairVerification(project=project, pair=pair, verified=True, by=owner) for pair in document_pairs
            )
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", default="2000,20000,100000", help="labelled sentence pairs per project, comma-separated")
    parser.add_argument("--sentences", type=int, default=12, help="sentences per document")
    parser.add_argument("--annotators", type=int, default=1)
    parser.add_argument("--formats", default="", help="default: every format")
    args = parser.parse_args()
    options = export_options_clean(formats=args.formats)
    if "csv" not in options["formats"]:
        parser.error("--formats must include csv: the bench counts the exported labels from it")
    print(f"export of a verified synthetic project: {args.sentences} x {args.sentences} sentences per document pair, "
          f"{args.annotators} annotator(s), formats {','.join(options['formats'])}")  # fmt: skip
    print(
        f"{'labels':>8} {'pairs':>6} {'build s':>8} | {'export s':>8} {'labels/s':>8} {'files MB':>8} | {'peak alloc MB':>13} {'RSS before -> peak MB':>22}"
    )
    for size in (int(x) for x in args.labels.split(",")):
        started = time.perf_counter()
        project = build_project(f"bench-{size}", size, args.sentences, args.annotators)
        built = time.perf_counter() - started
        project = AnnotationProject.objects.select_related("corpus", "suggestion_run").get(pk=project.pk)
        root = Path(tempfile.mkdtemp(prefix="export-bench-"))
        (root / "timed").mkdir()
        (root / "traced").mkdir()
        with PeakRss() as memory:
            rss_before = memory.peak
            started = time.perf_counter()
            files = export_write(project=project, options=options, root=root / "timed")
            seconds = time.perf_counter() - started
        labels = sum(1 for split in ("train", "dev", "test") for _ in (root / f"timed/csv/{split}.csv").open()) - 3
        megabytes = sum(entry["bytes"] for entry in files if entry["name"] != "export.zip") / 2**20
        tracemalloc.start()
        tracemalloc.reset_peak()
        export_write(project=project, options=options, root=root / "traced")
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        shutil.rmtree(root)
        print(
            f"{labels:>8} {project.pairs.count():>6} {built:>8.1f} | {seconds:>8.1f} {labels / seconds:>8.0f} {megabytes:>8.1f} | "
            f"{peak:>13.1f} {rss_before / 2**20:>10.0f} -> {memory.peak / 2**20:>7.0f}"
        )


if __name__ == "__main__":
    main()
