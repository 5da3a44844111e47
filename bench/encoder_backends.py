"""Encoder backends on CPU: speed and agreement with torch, on the same sentences, in one run.

    .venv/bin/python bench/encoder_backends.py [--limit N] [--threads T] [--backends torch,onnx,onnx-int8,openvino]

Needs ../shared/data/onestopenglish (and ../shared/data/deplain-web-dev for the aligner figure).
For every backend (models_ml.similarity.encoders.load_sentence_encoder with ``backend=``):

- sentences/s encoding the OneStopEnglish sentences (adv + ele, split as the app imports them), batch 32,
  T threads for every backend (torch.set_num_threads and the runtimes' own setting), best of two passes,
  and the ratio to torch fp32;
- cosine between its vector and torch's, per sentence: median, 1st percentile, minimum (the bar for
  counting as the same encoder: median >= 0.99, 1st percentile >= 0.97);
- LHA document alignment on OneStopEnglish: true pairs found at K = 1 (no threshold), from that
  backend's sentence vectors;
- group F1 on the 56 DEplain-web pairs of the aligner that uses the encoder (the untrained,
  hand-calibrated MiniLM cosine CRF; it was never trained on these pairs). The shipped default model is
  lexical and calls no encoder, so its figure cannot change with the backend.

The ONNX exports are made once, in a temporary cache, before timing (their time is printed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from bench.onestopenglish_lha import ONESTOP, read_level
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.data.deplain import read_deplain
from models_ml.data.evaluate import evaluate_pairs
from models_ml.mining.lha import align_documents, document_vectors
from models_ml.similarity.encoders import load_sentence_encoder

DEPLAIN = REPO_ROOT.parent / "shared" / "data" / "deplain-web-dev"


def encode_all(encoder, sentences: list[str], batch_size: int) -> tuple[np.ndarray, float]:
    """Vectors of every sentence and the best time of two passes."""
    best, vectors = float("inf"), None
    for _ in range(2):
        started = time.perf_counter()
        vectors = encoder.encode(sentences, batch_size=batch_size)
        best = min(best, time.perf_counter() - started)
    return vectors, best


def lha_found(vectors: dict[str, np.ndarray], source, target) -> int:
    """True document pairs found at K = 1 without a threshold."""
    source_docs = document_vectors([np.stack([vectors[s] for s in d.sentences]) for d in source])
    target_docs = document_vectors([np.stack([vectors[s] for s in d.sentences]) for d in target])
    return sum(source[s].doc_id == target[t].doc_id for s, t, _ in align_documents(source_docs, target_docs, k=1, theta_d=-1.0))


def deplain_group_f1(encoder, pairs) -> float:
    """Group F1 (Task 1) of the untrained MiniLM cosine CRF over the pairs, with this backend's vectors."""
    aligner = Aligner(AlignerConfig(measure="embedding_cosine"), seed=0)
    total = None
    for pair in pairs:
        complex_vectors = encoder.encode(pair.complex_sentences, batch_size=32)  # (m, d)
        simple_vectors = encoder.encode(pair.simple_sentences, batch_size=32)  # (n, d)
        similarity = (simple_vectors @ complex_vectors.T).astype(np.float32)  # (n simple, m complex), as the measures give
        result = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=similarity)
        report = evaluate_pairs(pair.groups, result.groups, len(pair.simple_sentences), len(pair.complex_sentences))
        total = report if total is None else total + report
    return total.group_task1.f1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="only the first N articles of each level (0: all)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every backend (this machine has 2 cores)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--backends", default="torch,onnx,onnx-int8,openvino")
    args = parser.parse_args()
    if not ONESTOP.exists():
        sys.exit(f"{ONESTOP} is missing: this benchmark needs ../shared/data/onestopenglish beside the checkout.")
    import torch

    torch.set_num_threads(args.threads)
    source, target = read_level("adv", args.limit), read_level("ele", args.limit)
    sentences = sorted({s for d in source + target for s in d.sentences})
    deplain = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv") if DEPLAIN.is_dir() else []
    print(
        f"OneStopEnglish: {len(source)} + {len(target)} documents, {len(sentences)} distinct sentences; "
        f"{args.threads} threads; DEplain-web pairs: {len(deplain) or 'absent'}"
    )
    cache = tempfile.mkdtemp(prefix="encoder-exports-")
    rows, reference, torch_rate = [], None, None
    for backend in args.backends.split(","):
        started = time.perf_counter()
        try:
            encoder = load_sentence_encoder(device="cpu", backend=backend, cache_dir=cache, threads=args.threads)
        except Exception as error:  # a backend whose package is missing is reported, not fatal
            print(f"{backend}: unavailable ({error})")
            continue
        load_seconds = time.perf_counter() - started
        encoder.encode(["Warm-up sentence."] * 8, batch_size=8)
        vectors, seconds = encode_all(encoder, sentences, args.batch_size)
        rate = len(sentences) / seconds
        if backend == "torch":
            reference, torch_rate = vectors, rate
        cosine = (vectors * reference).sum(axis=1) if reference is not None else None
        found = lha_found(dict(zip(sentences, vectors, strict=True)), source, target)
        f1 = deplain_group_f1(encoder, deplain) if deplain else float("nan")
        rows.append((backend, load_seconds, rate, rate / torch_rate if torch_rate else float("nan"), cosine, found, f1))
        print(f"  {backend}: done ({seconds:.1f} s for the sentences)", flush=True)
    print(
        f"\n{'backend':<10} {'load+export s':>13} {'sentences/s':>11} {'× torch':>7} {'cos median':>10} {'cos p1':>7} "
        f"{'cos min':>7} {'LHA K=1 found':>13} {'DEplain group F1':>16}"
    )
    for backend, load_seconds, rate, ratio, cosine, found, f1 in rows:
        median, p1, low = (np.median(cosine), np.percentile(cosine, 1), cosine.min()) if cosine is not None else (np.nan,) * 3
        print(
            f"{backend:<10} {load_seconds:>13.1f} {rate:>11.0f} {ratio:>7.2f} {median:>10.5f} {p1:>7.4f} {low:>7.4f} "
            f"{found:>6} / {len(source):<5} {f1:>16.3f}"
        )


if __name__ == "__main__":
    main()
