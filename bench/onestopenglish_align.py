"""End-to-end alignment throughput on OneStopEnglish adv <-> ele, and the encoder's share of the time.

    .venv/bin/python bench/onestopenglish_align.py [--limit N] [--skip-app] [--skip-cli]

Two paths, same 189 document pairs (the advanced and elementary versions of each article):

* App: import the adv and ele files, embed their sentences with the embedding job, then
  align every pair with the alignment job (default config: MiniLM cosine from the stored
  vectors for the CRF, plus TF-IDF, character 3-gram TF-IDF and Jaccard for every
  candidate). Both jobs run in a real ``manage.py procrastinate worker`` process. Pairs per
  second are counted over embedding + alignment, and the encoder's share is the embedding
  job's part of that (the alignment job finds every vector stored and encodes nothing).
* DB-free: ``models_ml.aligning.aligner.Aligner.align`` on the same sentence lists, as
  ``python -m models_ml align`` runs it (it encodes both documents itself). The encoder's
  share is the time inside ``encoder.encode``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _django import bench_owner, require_shared, setup_django
from onestopenglish import _database_url


def _worker(queue: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "procrastinate", "worker", "--queues", queue, "--one-shot"],
        env={**os.environ, "DATABASE_URL": _database_url()},
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="only the first N articles (0: all)")
    parser.add_argument("--skip-app", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()
    folder = require_shared("onestopenglish")
    setup_django()
    from django.conf import settings

    from alignment import services
    from alignment.aligning.service import alignment_run_create
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files, import_paths
    from alignment.models import DocumentPair, Sentence

    corpus, _ = services.corpus_get_or_create(name="OneStopEnglish adv-ele", language="en", owner=bench_owner(), level_order=["adv", "ele"])
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    paths = [p for p in import_paths(folder, options) if p.stem.lower().endswith(("-adv", "-ele"))]
    if args.limit:
        articles = sorted({p.stem.rsplit("-", 1)[0] for p in paths})[: args.limit]
        paths = [p for p in paths if p.stem.rsplit("-", 1)[0] in articles]
    report = corpus_import_files(corpus=corpus, files=((str(p.relative_to(folder)), p.read_bytes()) for p in paths), options=options)
    pairs = list(DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document"))
    sentences = Sentence.objects.filter(document__corpus=corpus).count()
    print(f"{report.documents_created} documents, {len(pairs)} adv-ele pairs, {sentences} sentences")

    if not args.skip_app:
        embedding = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
        _worker("embedding")
        embedding.refresh_from_db()
        embed_seconds = (embedding.finished_at - embedding.started_at).total_seconds()
        run = alignment_run_create(corpus=corpus)
        _worker("alignment")
        run.refresh_from_db()
        assert run.status == "succeeded", run.error
        align_seconds = (run.finished_at - run.started_at).total_seconds()
        total = embed_seconds + align_seconds
        writes = run.busy_seconds - run.measure_seconds - run.aligner_seconds
        print(
            f"app: embedding job {embed_seconds:.1f} s ({sentences / embed_seconds:.0f} sentences/s); "
            f"alignment job {align_seconds:.1f} s = {run.pairs_done / align_seconds:.2f} pairs/s "
            f"(measures {run.measure_seconds:.1f} s, paragraph alignment + CRF {run.aligner_seconds:.1f} s, "
            f"reads and writes {writes:.1f} s, encoder {run.encoder_seconds:.1f} s)"
        )
        print(
            f"app end to end: {run.pairs_done} pairs in {total:.1f} s = {run.pairs_done / total:.2f} pairs/s; "
            f"encoder share {100 * embed_seconds / total:.0f}%; {run.candidates_written} candidates {dict(run.label_counts)}"
        )

    if not args.skip_cli:
        _cli_path(pairs)


def _cli_path(pairs) -> None:
    from alignment.aligning.service import side_sentences
    from models_ml.aligning.aligner import Aligner
    from models_ml.aligning.aligner_config import AlignerConfig
    from models_ml.similarity.encoders import load_sentence_encoder
    from models_ml.similarity.measures import build_measure

    encoder = load_sentence_encoder(device="cpu")
    spent = {"encode": 0.0}
    real_encode = encoder.encode

    def timed_encode(texts, **kwargs):
        started = time.perf_counter()
        try:
            return real_encode(texts, **kwargs)
        finally:
            spent["encode"] += time.perf_counter() - started

    encoder.encode = timed_encode  # type: ignore[method-assign]
    aligner = Aligner(AlignerConfig(device="cpu"), measure=build_measure("embedding_cosine", encoder=encoder))
    documents = [(side_sentences(p.complex_document_id, ""), side_sentences(p.simple_document_id, "")) for p in pairs]
    aligner.align(documents[0][0].texts, documents[0][1].texts)  # warm-up
    spent["encode"] = 0.0
    started = time.perf_counter()
    groups = 0
    for complex_side, simple in documents:
        result = aligner.align(complex_side.texts, simple.texts, complex_side.paragraphs, simple.paragraphs)
        groups += len(result.groups)
    seconds = time.perf_counter() - started
    print(
        f"DB-free Aligner.align: {len(documents)} pairs in {seconds:.1f} s = {len(documents) / seconds:.2f} pairs/s; "
        f"encoder share {100 * spent['encode'] / seconds:.0f}%; {groups} groups"
    )


if __name__ == "__main__":
    main()
