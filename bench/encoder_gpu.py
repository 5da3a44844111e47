"""The sentence encoder on a GPU beside a 2-thread CPU worker, on the same sentences, in one run (where encoding goes).

    python bench/encoder_gpu.py [--sentences 200000] [--batch-sizes 64,256,1024] [--cpu-threads 2] [--cpu-sentences 3000]
                                [--reference vectors.npy]

Sentences: the demo corpus's (alignment/demo_corpus), split at sentence ends, repeated with a counter appended so that
no two are equal (lengths as the demo's: 10-40 words). The encoder is the app's own
(``models_ml.similarity.encoders.load_sentence_encoder``, backend torch, all-MiniLM-L6-v2), as a worker with
``ENCODER_DEVICE=cuda`` loads it. It prints, in one run:

cpu      torch fp32 on ``--cpu-threads`` threads (a 2-core worker's share), the first ``--cpu-sentences`` sentences,
         batch 16 (the app's CPU default): sentences/s, the baseline of the ratios;
cuda     torch on the GPU in fp32 (what the app runs there) and fp16 (``model.half()``, not an app setting), at each
         batch size, over all the sentences: sentences/s, the ratio to the CPU worker, and the cosine of each
         sentence's vector to the CPU's (median, 1st percentile, minimum) on the CPU's sentences;
project  hours to encode 1,000,000 sequences at each pace.

``--reference``: vectors (n, 384) of the first n sentences computed elsewhere (e.g. this machine's CPU with the
package's own fp32 weights, where the GPU host got a copy of the weights in fp16 to fit a transfer); their cosine to
the GPU's vectors is printed too. Needs a CUDA device for the GPU lines; without one it prints the CPU line alone.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from models_ml.similarity.encoders import DEFAULT_ENCODER, load_sentence_encoder

DEMO = REPO_ROOT / "alignment" / "demo_corpus"


def sentences(count: int) -> list[str]:
    """``count`` distinct sentences shaped like the demo corpus's."""
    base = []
    for path in sorted(DEMO.glob("*.txt")):
        base += [s.strip() for s in re.split(r"(?<=[.!?”])\s+", path.read_text(encoding="utf-8")) if len(s.split()) >= 4]
    return [f"{base[i % len(base)]} ({i // len(base)})" for i in range(count)]


def timed_encode(encoder, texts: list[str], batch_size: int) -> tuple[np.ndarray, float]:
    import torch

    encoder.encode(texts[: batch_size * 2], batch_size=batch_size)  # warm-up: kernels, allocator
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    vectors = encoder.encode(texts, batch_size=batch_size)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return vectors, time.perf_counter() - start


def agreement(a: np.ndarray, b: np.ndarray) -> str:
    cosines = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return f"cosine median {np.median(cosines):.5f}, p1 {np.percentile(cosines, 1):.5f}, min {cosines.min():.5f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--batch-sizes", default="64,256,1024")
    parser.add_argument("--cpu-threads", type=int, default=2)
    parser.add_argument("--cpu-sentences", type=int, default=3000)
    parser.add_argument("--reference", type=Path, help="vectors of the first n sentences computed elsewhere (.npy)")
    args = parser.parse_args()
    import torch

    texts = sentences(args.sentences)
    words = np.mean([len(t.split()) for t in texts])
    print(f"{len(texts):,} sentences, {words:.1f} words on average; torch {torch.__version__}")
    cpu = load_sentence_encoder(DEFAULT_ENCODER, device="cpu", backend="torch", threads=args.cpu_threads)
    cpu.model.float()
    cpu_vectors, seconds = timed_encode(cpu, texts[: args.cpu_sentences], 16)
    cpu_rate = len(cpu_vectors) / seconds
    print(f"cpu   torch fp32, {args.cpu_threads} threads, batch 16: {cpu_rate:8,.0f} sentences/s   1 M: {1e6 / cpu_rate / 3600:5.2f} h")
    if args.reference is not None:
        reference = np.load(args.reference)
        print(f"      against --reference: {agreement(cpu_vectors[: len(reference)], reference[: len(cpu_vectors)])}")
    if not torch.cuda.is_available():
        print("no CUDA device: the GPU lines need one")
        return
    print(f"cuda  {torch.cuda.get_device_name(0)}")
    gpu = load_sentence_encoder(DEFAULT_ENCODER, device="cuda", backend="torch")
    for dtype in ("fp32", "fp16"):
        gpu.model.float() if dtype == "fp32" else gpu.model.half()
        for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
            vectors, seconds = timed_encode(gpu, texts, batch_size)
            rate = len(texts) / seconds
            line = f"      {dtype} batch {batch_size:5}: {rate:8,.0f} sentences/s  x{rate / cpu_rate:6.1f} the CPU worker"
            print(f"{line}   1 M: {1e6 / rate / 60:5.1f} min   vs cpu {agreement(vectors[: len(cpu_vectors)], cpu_vectors)}")
            if args.reference is not None:
                print(f"      {'':>16}against --reference: {agreement(vectors[: len(reference)], reference[: len(vectors)])}")
        print(f"      peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB")


if __name__ == "__main__":
    main()
