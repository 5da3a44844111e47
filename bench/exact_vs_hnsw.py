"""A collection searched against itself, every vector a query (a MUSS job's neighbours): exact search against HNSW.

    .venv/bin/pip install -r bench/requirements.txt      # faiss-cpu
    .venv/bin/python bench/exact_vs_hnsw.py [--sizes 20000,40000,60000] [--threads 1] [--k 9] [--vectors both]

For each size and kind of vectors, in one run on the same vectors, the app's own index
(``models_ml.mining.vector_index.FaissIndex``, the settings a MUSS job's index has: M 16, efConstruction 64,
efSearch ``--ef-search``) built exact and built HNSW, each then searching every vector's ``--k`` nearest others in
batches of 1,000 queries (as a neighbours shard asks):

exact  IndexFlatIP: nothing to build; the search is n x n x d.
hnsw   the graph built first (serially, before any shard can search), then searched.

It prints each one's seconds, HNSW's over the exact's (above 1: the exact search is the cheaper), and HNSW's recall
of the exact neighbours. This is what ``SELF_SEARCH_EXACT_BELOW`` rests on. Vectors: ``random`` (isotropic unit
vectors, HNSW's hardest case) and ``minilm`` (bench/hnsw_scale.py's synthetic collection: topics, documents and
sentences with MiniLM's effective dimension of 109), or ``both``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _synthetic import MINILM_PARTICIPATION_RATIO, SyntheticCollection, unit_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models_ml.mining.vector_index import FaissIndex

BATCH = 1_000


def vectors_of(kind: str, n: int, dim: int) -> np.ndarray:
    if kind == "random":
        return unit_rows(np.random.default_rng(n).standard_normal((n, dim), dtype=np.float32))
    config = SimpleNamespace(
        vectors=n, documents=max(1, n // 10), dim=dim, queries=1, topics=max(1, n // 200), effective_dim=MINILM_PARTICIPATION_RATIO,
        seed=n, chunk_documents=10_000,
    )  # fmt: skip
    return np.concatenate([chunk for _, _, chunk in SyntheticCollection(config).chunks()])


def search_all(vectors: np.ndarray, *, exact: bool, k: int, ef_search: int, threads: int) -> tuple[float, float, np.ndarray]:
    """(build seconds, search seconds, (n, k) neighbour ids) of every vector against the others."""
    ids = np.arange(len(vectors), dtype=np.int64)
    started = time.perf_counter()
    index = FaissIndex(vectors, ids, ef_search=ef_search, threads=threads, exact_below=len(vectors) + 1 if exact else 1)
    built = time.perf_counter()
    found = [index.search(vectors[s : s + BATCH], k, exclude=ids[s : s + BATCH]).indices for s in range(0, len(vectors), BATCH)]
    return built - started, time.perf_counter() - built, np.concatenate(found)


def recall(approximate: np.ndarray, exact: np.ndarray) -> float:
    hits = sum(len(set(a.tolist()) & set(e.tolist()) - {-1}) for a, e in zip(approximate, exact))
    return hits / max(1, int((exact >= 0).sum()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,40000,60000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=9)
    parser.add_argument("--ef-search", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1, help="faiss's threads (1: a worker on one core)")
    parser.add_argument("--vectors", choices=["random", "minilm", "both"], default="both")
    args = parser.parse_args()
    kinds = ["random", "minilm"] if args.vectors == "both" else [args.vectors]
    print(f"every vector's {args.k} nearest others, {args.dim}-d, {args.threads} thread(s), batches of {BATCH:,} queries")
    print(f"{'vectors':>8} {'kind':>7} | {'exact s':>8} | {'hnsw build':>10} {'search':>7} {'total':>7} | {'hnsw/exact':>10} | recall@k")
    for size in map(int, args.sizes.split(",")):
        for kind in kinds:
            vectors = vectors_of(kind, size, args.dim)
            options = {"k": args.k, "ef_search": args.ef_search, "threads": args.threads}
            exact_build, exact_search, truth = search_all(vectors, exact=True, **options)
            build, search, found = search_all(vectors, exact=False, **options)
            exact_total, total = exact_build + exact_search, build + search
            print(
                f"{size:>8,} {kind:>7} | {exact_total:>8.1f} | {build:>10.1f} {search:>7.1f} {total:>7.1f} | {total / exact_total:>10.2f} | "
                f"{recall(found, truth):.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
