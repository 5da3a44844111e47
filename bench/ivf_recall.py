"""Recall of the MUSS paper's IVF-SQ8 index against exact search, and the MUSS pairs it finds (issue 36 §2).

    .venv/bin/python bench/ivf_recall.py [--sizes 100000,1000000] [--nprobe 8,16,32,64] [--queries 1000] [--pairs-at 100000]
    .venv/bin/python bench/ivf_recall.py --real [--nprobe 8,16,32,64]    # needs ../shared/data/onestopenglish

Vectors: shaped like MiniLM's (``bench/_synthetic.py``'s spectrum, 384 dimensions, effective 109), in topics, each row
with one near-paraphrase (rows i and i + n/2), as a MUSS collection has. For each
size it builds :class:`models_ml.mining.ivf_index.IvfIndex` with the app's defaults (about 4 sqrt(n) cells, trained on
a sample), and for each nprobe prints recall@8 of ``--queries`` random queries against the exact top 8 (numpy, by
blocks), with the re-ranking the app does (candidates re-scored by the exact cosine), the seconds of the build and of
the queries. At ``--pairs-at`` it also mines the collection with ``mine_muss`` twice, exact and through the index at
the default nprobe, and prints the pairs each found and how many they share. No database: the index alone.

``--real``: real sentence vectors instead, the only collection of them here: every OneStopEnglish text's MUSS sequences
(``bench/mining_halfvec.py``'s, about 46,000 distinct), encoded by all-MiniLM-L6-v2 with the app's default backend; the
same index and recall, and the pairs ``mine_muss`` finds on those documents with exact search and through an index built
over them. Its default index has 1,024 cells, so nprobe 8 probes the share of the collection (0.8 %) that the default
nprobe 32 probes of a million vectors' 4,096 cells. About 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]  # models_ml; bench's helpers

from _synthetic import DOC_SPREAD, MINILM_PARTICIPATION_RATIO, noise_scales, unit_rows

from models_ml.mining.ivf_index import DEFAULT_NPROBE, IvfIndex
from models_ml.mining.knn import top_k
from models_ml.mining.muss import MussConfig, mine_muss
from models_ml.mining.types import MiningDocument

DIMENSIONS = 384


def collection(n: int, seed: int = 0) -> np.ndarray:
    """(n, d) unit rows shaped like MiniLM's (bench/_synthetic.py: a power-law spectrum of its effective dimension, 109
    of 384): topics, a sentence centre per pair of rows near its topic, and rows i and i + n/2 near their centre
    (near-paraphrases), generated chunk by chunk."""
    rng = np.random.default_rng(seed)
    scales = noise_scales(DIMENSIONS, MINILM_PARTICIPATION_RATIO)  # (d,)
    topics = unit_rows(rng.standard_normal((max(n // 1000, 10), DIMENSIONS), dtype=np.float32) * scales)  # (T, d)
    half = n // 2
    vectors = np.empty((n, DIMENSIONS), dtype=np.float32)
    for start in range(0, half, 50_000):
        rows = np.arange(start, min(start + 50_000, half))
        centres = (
            topics[rng.integers(0, len(topics), size=len(rows))]
            + DOC_SPREAD * rng.standard_normal((len(rows), DIMENSIONS), dtype=np.float32) * scales
        )
        for offset in (0, half):
            vectors[rows + offset] = unit_rows(centres + 0.5 * rng.standard_normal(centres.shape, dtype=np.float32) * scales)
    if n % 2:
        vectors[-1] = unit_rows(rng.standard_normal((1, DIMENSIONS), dtype=np.float32))[0]
    return vectors


def build(vectors: np.ndarray, nprobe: int) -> tuple[IvfIndex, float]:
    started = time.perf_counter()
    n = len(vectors)
    every = max(1, n // IvfIndex.sample_size(n))
    index = IvfIndex(vectors[::every], n, nprobe=nprobe, threads=2)
    for begin in range(0, n, 20_000):
        index.add(vectors[begin : begin + 20_000], np.arange(begin, min(begin + 20_000, n)))
    return index, time.perf_counter() - started


def recall(vectors: np.ndarray, index: IvfIndex, queries: np.ndarray, nprobe: int, k: int = 8) -> tuple[float, float]:
    """recall@k of the re-ranked IVF neighbours (itself excluded) against the exact ones, and the queries' seconds."""
    exact = top_k(vectors[queries], vectors, k + 1).indices  # (q, k + 1): itself first
    truth = [set(row[row != q][:k].tolist()) for row, q in zip(exact, queries)]
    index.probe(nprobe)
    started = time.perf_counter()
    found = index.search(vectors[queries], k, lambda ids: vectors[ids], exclude=queries).indices
    seconds = time.perf_counter() - started
    return float(np.mean([len(truth[i] & set(found[i].tolist())) / k for i in range(len(queries))])), seconds


def mined(vectors: np.ndarray, search) -> set:
    """mine_muss over one-sentence documents whose 'texts' name their row (the encoder returns the stored rows)."""
    documents = [MiningDocument(str(i), [f"row {i} of the collection."]) for i in range(len(vectors))]

    def encode(texts):
        return vectors[[int(text.split()[1]) for text in texts]]

    config = MussConfig(min_levenshtein=0.0, encode_batch=4096)
    return {(p.source_doc, p.target_doc) for p in mine_muss(documents, encode=encode, config=config, search=search)}


def real(nprobes: list[int], queries_wanted: int) -> None:
    """The recall and the pairs on OneStopEnglish's real MiniLM vectors (see the module's docstring)."""
    from mining_halfvec import documents, encoded_sequences

    docs, config = documents(0), MussConfig()
    texts, vectors, seconds = encoded_sequences(docs, config)  # the app's default backend
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    print(f"{len(docs)} OneStopEnglish texts, {len(texts):,} distinct MUSS sequences encoded in {seconds:.0f} s")
    index, build_seconds = build(vectors, DEFAULT_NPROBE)
    queries = np.random.default_rng(1).choice(len(vectors), size=min(queries_wanted, len(vectors)), replace=False)
    figures = [f"nprobe {p}: {value:.3f}" for p in nprobes for value in [recall(vectors, index, queries, p)[0]]]
    print(f"{len(vectors):>9,} vectors, {index.settings.cells} cells, built in {build_seconds:.0f} s | " + "; ".join(figures), flush=True)
    row = {text: position for position, text in enumerate(texts)}

    def encode(batch: list[str]) -> np.ndarray:
        return vectors[[row[text] for text in batch]]

    def through_index(rows: np.ndarray, k: int):
        built, _ = build(rows, DEFAULT_NPROBE)
        return built.search(rows, k, lambda ids: rows[ids], exclude=np.arange(len(rows)))

    found = {}
    for name, search in (("exact", None), ("IVF", through_index)):
        started = time.perf_counter()
        found[name] = {
            (p.source_doc, p.source, p.target_doc, p.target) for p in mine_muss(docs, encode=encode, config=config, search=search)
        }
        print(f"{'':>9}  MUSS pairs, {name}: {len(found[name]):,} in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"{'':>9}  shared {len(found['exact'] & found['IVF']):,} (nprobe {DEFAULT_NPROBE})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--nprobe", default="8,16,32,64")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--pairs-at", type=int, default=100000, help="size at which to compare mined pairs (0: none)")
    parser.add_argument("--real", action="store_true", help="OneStopEnglish's real MiniLM vectors instead of the stand-in")
    args = parser.parse_args()
    if args.real:
        return real([int(p) for p in args.nprobe.split(",")], args.queries)
    print(
        f"IVF-SQ8, {DIMENSIONS}-d stand-in vectors, re-ranked by exact cosine; recall@8 over {args.queries} queries; default nprobe {DEFAULT_NPROBE}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        vectors = collection(n)
        index, build_seconds = build(vectors, DEFAULT_NPROBE)
        queries = np.random.default_rng(1).choice(n, size=min(args.queries, n), replace=False)
        cells = index.settings.cells
        figures = []
        for nprobe in (int(p) for p in args.nprobe.split(",")):
            value, seconds = recall(vectors, index, queries, nprobe)
            figures.append(f"nprobe {nprobe}: {value:.3f} ({1000 * seconds / len(queries):.2f} ms/query)")
        index.probe(DEFAULT_NPROBE)
        print(
            f"{n:>9,} vectors, {cells} cells, trained on {index.settings.trained_on:,}, built in {build_seconds:.0f} s | "
            + "; ".join(figures),
            flush=True,
        )
        if n == args.pairs_at:
            exact = mined(vectors, None)
            through = mined(vectors, lambda v, k, index=index: index.search(v, k, lambda ids: v[ids], exclude=np.arange(len(v))))
            print(
                f"{'':>9}  MUSS pairs at nprobe {DEFAULT_NPROBE}: exact {len(exact):,}, IVF {len(through):,}, shared {len(exact & through):,}",
                flush=True,
            )


if __name__ == "__main__":
    main()
