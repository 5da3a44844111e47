"""End-to-end alignment throughput on OneStopEnglish adv <-> ele per encoder backend, and the encoder's share of the time.

    .venv/bin/python bench/onestopenglish_align.py [--backends torch,onnx-int8] [--limit N] [--skip-app] [--skip-cli]

Two paths, same 189 document pairs (the advanced and elementary versions of each article), each
encoder backend in turn (``ENCODER_BACKEND``; the ONNX export is made once, before any timing, and
its time is printed apart):

* App: import the adv and ele files once; then per backend embed their sentences with the embedding
  job and align every pair with the alignment job, each in a real ``manage.py procrastinate worker``
  process started with that backend. The alignment job runs the app's default (ALIGNER_MODEL_DIR:
  the shipped model, a lexical learned pair scorer + CRF; ``--model untrained`` for the hand-calibrated
  MiniLM one) with the default measures (MiniLM cosine from the stored vectors, TF-IDF, character
  3-gram TF-IDF, Jaccard). It finds every vector stored and encodes nothing, so its work is the same
  for every backend. Pairs per second are counted over embedding + alignment, and the encoder's share
  is the embedding job's part of that. Between backends the run and the vectors are dropped.
* DB-free: ``models_ml.aligning.aligner.Aligner.align`` on the same sentence lists, as
  ``python -m models_ml align`` runs it: by default with the shipped model, which calls no encoder
  (share 0, the same for every backend: timed once), and with ``--untrained``, the MiniLM cosine
  aligner, which encodes both documents itself (per backend). The share is the time inside ``encode``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from _backends import add_backends_argument, encoder_vectors_drop, load_backend, run_worker
from _django import bench_owner, require_shared, setup_django
from onestopenglish import onestop_paths


@dataclass
class AppFigures:
    backend: str
    load_seconds: float
    embed_seconds: float
    align_seconds: float
    pairs: int

    def share(self) -> float:
        return self.embed_seconds / (self.embed_seconds + self.align_seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="only the first N articles (0: all)")
    parser.add_argument("--model", default=None, help="the alignment job's model directory (default: ALIGNER_MODEL_DIR; 'untrained')")
    parser.add_argument("--skip-app", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    add_backends_argument(parser)
    args = parser.parse_args()
    folder = require_shared("onestopenglish")
    setup_django()
    from django.conf import settings

    from alignment import services
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.models import DocumentPair, Sentence

    corpus, _ = services.corpus_get_or_create(name="OneStopEnglish adv-ele", language="en", owner=bench_owner(), level_order=["adv", "ele"])
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    paths = onestop_paths(folder, options, levels=("adv", "ele"), limit=args.limit)
    report = corpus_import_files(corpus=corpus, files=((str(p.relative_to(folder)), p.read_bytes()) for p in paths), options=options)
    pairs = list(DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document"))
    sentences = Sentence.objects.filter(document__corpus=corpus).count()
    print(f"{report.documents_created} documents, {len(pairs)} adv-ele pairs, {sentences} sentences", flush=True)

    model_dir = settings.ALIGNER_MODEL_DIR if args.model is None else ("" if args.model == "untrained" else args.model)
    app_rows = [] if args.skip_app else [_app_path(backend, corpus, sentences, model_dir) for backend in args.backends]
    cli_rows = [] if args.skip_cli else _cli_path(pairs, args.backends)
    if app_rows:
        print(f"\napp: embedding job + alignment job (model {model_dir or 'untrained'}), {len(pairs)} pairs, {sentences} sentences")
        print(f"{'backend':<10} {'load s':>7} {'embed s':>8} {'align s':>8} {'pairs/s':>8} {'encoder share':>13}")
        for row in app_rows:
            total = row.embed_seconds + row.align_seconds
            print(
                f"{row.backend:<10} {row.load_seconds:>7.1f} {row.embed_seconds:>8.1f} {row.align_seconds:>8.1f} "
                f"{row.pairs / total:>8.2f} {100 * row.share():>12.0f}%"
            )
    if cli_rows:
        print(f"\nDB-free Aligner.align (python -m models_ml align), {len(pairs)} pairs")
        print(f"{'aligner':<38} {'backend':<10} {'seconds':>8} {'pairs/s':>8} {'encoder share':>13}")
        for aligner, backend, seconds, encode_seconds in cli_rows:
            print(f"{aligner:<38} {backend:<10} {seconds:>8.1f} {len(pairs) / seconds:>8.2f} {100 * encode_seconds / seconds:>12.0f}%")


def _app_path(backend: str, corpus, sentences: int, model_dir: str) -> AppFigures:
    """Embedding job, then alignment job, both in worker processes with ``backend``; then drop both results."""
    from django.conf import settings

    from alignment import services
    from alignment.aligning.service import alignment_run_create
    from alignment.models import AlignmentRun

    _, load_seconds = load_backend(backend, settings.ENCODER_MODEL)  # makes the ONNX export outside the timed jobs
    embedding = services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    run_worker("embedding", backend)
    embedding.refresh_from_db()
    assert embedding.status == "succeeded", embedding.error
    embed_seconds = (embedding.finished_at - embedding.started_at).total_seconds()
    run = alignment_run_create(corpus=corpus, aligner_config={"encoder": settings.ENCODER_MODEL}, model_dir=model_dir)
    run_worker("alignment", backend)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    align_seconds = (run.finished_at - run.started_at).total_seconds()
    writes = run.busy_seconds - run.measure_seconds - run.aligner_seconds
    print(
        f"{backend}: loaded in {load_seconds:.1f} s (with the ONNX export when the cache had none); "
        f"embedding job {embed_seconds:.1f} s ({sentences / embed_seconds:.0f} sentences/s); "
        f"alignment job {align_seconds:.1f} s = {run.pairs_done / align_seconds:.2f} pairs/s "
        f"(measures {run.measure_seconds:.1f} s, paragraph alignment + CRF {run.aligner_seconds:.1f} s, "
        f"reads and writes {writes:.1f} s, encoder {run.encoder_seconds:.1f} s); "
        f"{run.candidates_written} candidates {dict(run.label_counts)}",
        flush=True,
    )
    figures = AppFigures(backend, load_seconds, embed_seconds, align_seconds, run.pairs_done)
    AlignmentRun.objects.filter(pk=run.pk).delete()
    encoder_vectors_drop(settings.ENCODER_MODEL)
    return figures


class TimedEncoder:
    """An encoder that adds the seconds spent in ``encode`` to ``seconds``."""

    def __init__(self, encoder) -> None:
        self.encoder, self.name, self.dimensions, self.seconds = encoder, encoder.name, encoder.dimensions, 0.0

    def encode(self, sentences, *, batch_size: int = 64):
        started = time.perf_counter()
        try:
            return self.encoder.encode(sentences, batch_size=batch_size)
        finally:
            self.seconds += time.perf_counter() - started


def _cli_path(pairs, backends: list[str]) -> list[tuple[str, str, float, float]]:
    """(aligner, backend, seconds, seconds in encode) for the shipped model once, and the untrained aligner per backend."""
    from django.conf import settings

    from alignment.aligning.reading import side_sentences
    from models_ml.aligning.aligner import Aligner
    from models_ml.aligning.aligner_config import AlignerConfig
    from models_ml.data.checkpoint import DEFAULT_MODEL_DIR
    from models_ml.similarity.measures import build_measure

    documents = [(side_sentences(p.complex_document_id, ""), side_sentences(p.simple_document_id, "")) for p in pairs]
    shipped = Aligner.load(DEFAULT_MODEL_DIR, device="cpu")
    assert not shipped.uses_encoder, "the shipped model now reads sentence vectors: time its encoder per backend too"
    rows = [("shipped model (default)", "none", _align_all(shipped, documents), 0.0)]
    print(f"DB-free, shipped model: {rows[0][2]:.1f} s, no encoder", flush=True)
    for backend in backends:
        encoder, _ = load_backend(backend, settings.ENCODER_MODEL)
        timed = TimedEncoder(encoder)
        untrained = Aligner(AlignerConfig(device="cpu"), measure=build_measure("embedding_cosine", encoder=timed))
        seconds = _align_all(untrained, documents, timed)
        rows.append(("untrained MiniLM cosine (--untrained)", backend, seconds, timed.seconds))
        print(f"DB-free, untrained, {backend}: {seconds:.1f} s, {timed.seconds:.1f} s encoding", flush=True)
    return rows


def _align_all(aligner, documents, timed: TimedEncoder | None = None) -> float:
    """Seconds to align every document pair, after one warm-up pair (not counted in ``timed`` either)."""
    aligner.align(documents[0][0].texts, documents[0][1].texts)  # warm-up: first calls pay one-off costs
    if timed is not None:
        timed.seconds = 0.0
    started = time.perf_counter()
    for complex_side, simple in documents:
        aligner.align(complex_side.texts, simple.texts, complex_side.paragraphs, simple.paragraphs)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
