"""MUSS mining on German: how many gold-like pairs today's dense MiniLM job and the hybrid USE job find.

    .venv/bin/python bench/deplain_muss.py [--limit 56]

Needs ../shared/data/deplain-web-dev. All complex and simple documents of the 56 pairs go into one German
corpus (the app's own tables, a throw-away embedded database), and the app's MUSS job mines it in-process
twice, as the worker would: ``dense`` with all-MiniLM-L6-v2 (what a German corpus got before) and
``hybrid`` with USE multilingual v3 (what it gets now). Each job runs with no score bound (max_distance 2)
so the table can show the bounds after the fact; the ratio margin (1.06) and the other filters apply.

A mined pair is *gold-like* when it links a complex document to its own simple version and some gold
alignment group joins a sentence of one side to a sentence of the other. Printed per domain and bound:
pairs between a document and its own other version, how many of them are gold-like, and all pairs.
"""

from __future__ import annotations

import argparse
import time

from _django import require_shared, setup_django

setup_django()

from django.db import transaction

from alignment.aligning.measures import app_encoder
from alignment.mining import service as mining
from alignment.mining.models import MinedPair, MiningShard
from alignment.models import Document, Paragraph, Sentence
from alignment.services import corpus_get_or_create
from bench._django import bench_owner
from models_ml.data.deplain import read_deplain
from models_ml.similarity.multilingual import USE_ENCODER

BOUNDS = {"dense": (0.15, 0.25, 0.35), "hybrid": (0.3, 0.4, 0.5, 0.6)}


def make_corpus(pairs, owner):
    corpus, _ = corpus_get_or_create(name="DEplain-web dev", language="de", owner=owner)
    documents: dict[int, tuple[str, str, str]] = {}  # document id -> (pair id, side, domain)
    with transaction.atomic():
        for pair in pairs:
            for side, sentences in (("complex", pair.complex_sentences), ("simple", pair.simple_sentences)):
                key = f"{pair.pair_id}-{side}"
                document = Document.objects.create(
                    corpus=corpus, external_id=key, level=side, raw_text="x", content_hash=key, text_hash=key
                )
                paragraph = Paragraph.objects.create(document=document, index=0, char_start=0, char_end=1)
                Sentence.objects.bulk_create(
                    Sentence(document=document, paragraph=paragraph, index=i, index_in_paragraph=i, text=t, char_start=0, char_end=1)
                    for i, t in enumerate(sentences)
                )
                documents[document.pk] = (pair.pair_id, side, pair.domain)
    return corpus, documents


def run(corpus, retrieval: str, encoder: str) -> tuple[object, float]:
    config = {"retrieval": retrieval, "encoder": encoder, "max_distance": 2.0}
    job = mining.mining_job_create(source_corpus=corpus, method="muss", config=config)[0]
    model = app_encoder(encoder)
    started = time.perf_counter()
    mining.mining_job_prepare(job_id=job.pk, encode=lambda texts: model.encode(texts))
    while shard := MiningShard.objects.filter(job=job).exclude(status=MiningShard.Status.SUCCEEDED).order_by("phase", "index").first():
        mining.mining_shard_execute(shard_id=shard.pk)
    job.refresh_from_db()
    if job.status != "succeeded":
        raise SystemExit(f"{retrieval} job failed: {job.error}")
    return job, time.perf_counter() - started


def gold_links(pairs) -> dict[str, set[tuple[int, int]]]:
    return {pair.pair_id: {(c, s) for group in pair.groups for c in group.complex for s in group.simple} for pair in pairs}


def tally(job, documents, links, bound: float) -> dict[str, list[int]]:
    """Per domain: [pairs of a document and its own other version, of them gold-like, all pairs] under ``bound``."""
    counts: dict[str, list[int]] = {}
    for pair in MinedPair.objects.filter(job=job).iterator():
        if 1.0 - pair.features["cosine"] >= bound:
            continue
        (source_pair, source_side, domain), (target_pair, _, _) = (
            documents[pair.source_document_id],
            documents[pair.target_document_id],
        )
        row = counts.setdefault(domain, [0, 0, 0])
        row[2] += 1
        if source_pair != target_pair:
            continue
        row[0] += 1
        complex_, simple = (
            (pair.source_sentences, pair.target_sentences) if source_side == "complex" else (pair.target_sentences, pair.source_sentences)
        )
        row[1] += any((c, s) in links[source_pair] for c in complex_ for s in simple)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=56, help="document pairs to use (default all 56)")
    args = parser.parse_args()
    data = require_shared("deplain-web-dev")
    pairs = read_deplain(data / "documents.csv", data / "alignments.csv")[: args.limit]
    corpus, documents = make_corpus(pairs, bench_owner())
    links = gold_links(pairs)
    print(f"{len(pairs)} document pairs, {Sentence.objects.filter(document__corpus=corpus).count()} sentences")
    print("| retrieval, encoder | bound (1 - score <) | domain | own-version pairs | gold-like | all pairs |")
    print("|---|---|---|---|---|---|")
    for retrieval, encoder in (("dense", "all-MiniLM-L6-v2"), ("hybrid", USE_ENCODER)):
        job, seconds = run(corpus, retrieval, encoder)
        print(f"<!-- {retrieval}: {seconds:.1f} s, {MinedPair.objects.filter(job=job).count()} pairs before the bound -->")
        for bound in BOUNDS[retrieval]:
            counts = tally(job, documents, links, bound)
            for domain in sorted(counts) + ["all"]:
                row = counts.get(domain) or [sum(r[i] for r in counts.values()) for i in range(3)]
                print(f"| {retrieval}, {encoder} | {bound} | {domain} | {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
    main()
