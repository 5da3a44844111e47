"""MUSS mining in the app: how many gold-like pairs each retrieval finds, German (DEplain-web) or English (the demo).

    .venv/bin/python bench/muss_gold.py --corpus deplain [--limit 56] [--systems dense-minilm,dense-use,hybrid-minilm,hybrid-use]
    .venv/bin/python bench/muss_gold.py --corpus demo

``deplain`` needs ../shared/data/deplain-web-dev: all complex and simple documents of its 56 pairs go into
one German corpus; ``demo`` is the app's own English demo corpus (six stories, two versions each, the
reference groups of ALIGNMENTS.md). The app's MUSS job mines the corpus in-process (the app's tables in a
throw-away embedded database, prepare then every shard as a worker would) once per system: dense or hybrid
(dense weight 0.3), each with all-MiniLM-L6-v2 (what every corpus got before) or USE multilingual v3 (what a
non-English corpus gets now). Each job runs with no score
bound (max_distance 2) so the table can apply the bounds after the fact; the ratio margin (1.06) and the
other filters apply.

A mined pair is *gold-like* when it links a complex document to its own simple version and some reference
group joins a sentence of one side to a sentence of the other. Printed per domain and bound: pairs between
a document and its own other version, how many of them are gold-like, and all pairs.
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

BOUNDS = {"dense": (0.15, 0.25, 0.35, 0.45), "hybrid": (0.3, 0.4, 0.5, 0.6)}


def deplain_corpus(limit: int, owner):
    """One German corpus of the pairs' complex and simple documents; document id -> (pair, side, domain); gold links."""
    data = require_shared("deplain-web-dev")
    pairs = read_deplain(data / "documents.csv", data / "alignments.csv")[:limit]
    corpus, _ = corpus_get_or_create(name="DEplain-web dev", language="de", owner=owner)
    documents: dict[int, tuple[str, str, str]] = {}
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
    links = {pair.pair_id: {(c, s) for group in pair.groups for c in group.complex for s in group.simple} for pair in pairs}
    return corpus, documents, links


def demo_corpus(owner):
    """The app's English demo corpus (adv = complex, ele = simple) and the reference groups of its ALIGNMENTS.md."""
    from tests.alignment.test_demo_alignment_quality import reference_groups
    from webapp.demo import demo_corpus_import

    corpus, _ = demo_corpus_import(owner=owner)
    documents = {
        pk: (story, "complex" if level == "adv" else "simple", "news")
        for pk, story, level in Document.objects.filter(corpus=corpus).values_list("pk", "external_id", "level")
    }
    links = {
        story: {(c, s) for group in groups for c in group.complex for s in group.simple}
        for story, (_, _, groups) in reference_groups().items()
    }
    return corpus, documents, links


def run(corpus, retrieval: str, encoder: str) -> tuple[object, float]:
    config = {"retrieval": retrieval, "encoder": encoder, "max_distance": 2.0, "language": corpus.language}
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


SYSTEMS = {
    "dense-minilm": ("dense", "all-MiniLM-L6-v2"),
    "dense-use": ("dense", USE_ENCODER),
    "hybrid-minilm": ("hybrid", "all-MiniLM-L6-v2"),
    "hybrid-use": ("hybrid", USE_ENCODER),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["deplain", "demo"], default="deplain")
    parser.add_argument("--limit", type=int, default=56, help="deplain: document pairs to use (default all 56)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)} (default all)")
    args = parser.parse_args()
    owner = bench_owner()
    corpus, documents, links = deplain_corpus(args.limit, owner) if args.corpus == "deplain" else demo_corpus(owner)
    print(f"{len(documents)} documents, {Sentence.objects.filter(document__corpus=corpus).count()} sentences, language {corpus.language}")
    print("| retrieval, encoder | bound (1 - score <) | domain | own-version pairs | gold-like | all pairs |")
    print("|---|---|---|---|---|---|")
    chosen = [name.strip() for name in args.systems.split(",") if name.strip()]
    if unknown := sorted(set(chosen) - set(SYSTEMS)):
        parser.error(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    for retrieval, encoder in (SYSTEMS[name] for name in chosen):
        job, seconds = run(corpus, retrieval, encoder)
        print(f"<!-- {retrieval} {encoder}: {seconds:.1f} s, {MinedPair.objects.filter(job=job).count()} pairs before the bound -->")
        for bound in BOUNDS[retrieval]:
            counts = tally(job, documents, links, bound)
            for domain in sorted(counts) + ["all"]:
                row = counts.get(domain) or [sum(r[i] for r in counts.values()) for i in range(3)]
                print(f"| {retrieval}, {encoder} | {bound} | {domain} | {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
    main()
