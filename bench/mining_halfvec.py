"""Whether a MUSS job may keep its sequence vectors in half precision: the same pairs and neighbours as float32?

    .venv/bin/python bench/mining_halfvec.py [--documents 0] [--backend torch]   # needs ../shared/data/onestopenglish

Real sentence vectors, not the stand-in encoder's: every OneStopEnglish text (three levels of 189 articles, so
near-paraphrases abound, as in the corpora MUSS mines) split at sentence ends, its MUSS sequences (one and two
sentences, as a job makes them) encoded once by all-MiniLM-L6-v2. Then ``mine_muss`` with exact search twice on the
same documents: with the float32 vectors, and with the same vectors rounded to float16 and widened back, which is what
a job reads from pgvector's ``halfvec`` column. Printed: the pairs each finds and how many they share, the largest
difference of a shared pair's margin, and recall@8 of the float16 neighbours against the float32 ones (exact search
on unit rows). About 14 minutes on 2 cores (encoding 5, each mining 4). ``--documents N``: the first N texts only.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _django import require_shared

from models_ml.mining.muss import MussConfig, candidate_sequences, mine_muss
from models_ml.mining.types import MiningDocument
from models_ml.similarity.encoders import load_sentence_encoder

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def documents(limit: int) -> list[MiningDocument]:
    paths = sorted(require_shared("onestopenglish").glob("*/*.txt"))
    found = []
    for path in paths[:limit] if limit else paths:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
        found.append(MiningDocument(path.stem, [s.strip() for line in lines for s in SENTENCE_END.split(line) if s.strip()]))
    return found


def encoded_sequences(docs: list[MiningDocument], config: MussConfig, backend: str = "") -> tuple[list[str], np.ndarray, float]:
    """The documents' distinct MUSS sequences (sorted), their all-MiniLM-L6-v2 vectors and the seconds encoding took."""
    texts = sorted({sequence.text for sequence in candidate_sequences(docs, config)})
    started = time.perf_counter()
    vectors = np.asarray(load_sentence_encoder("all-MiniLM-L6-v2", backend=backend).encode(texts), dtype=np.float32)
    return texts, vectors, time.perf_counter() - started


def exact_neighbours(unit: np.ndarray, k: int, block: int = 2000) -> np.ndarray:
    """Each row's k nearest rows by inner product, itself left out (as sets: the order within is not compared)."""
    found = np.empty((len(unit), k), dtype=np.int64)
    for start in range(0, len(unit), block):
        scores = unit[start : start + block] @ unit.T
        scores[np.arange(len(scores)), np.arange(start, start + len(scores))] = -np.inf
        found[start : start + block] = np.argpartition(-scores, k, axis=1)[:, :k]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=0, help="the first N texts only (0: all)")
    parser.add_argument("--backend", default="torch", help="the encoder's backend (torch, onnx, ...)")
    args = parser.parse_args()
    docs, config = documents(args.documents), MussConfig()
    texts, vectors, seconds = encoded_sequences(docs, config, args.backend)
    print(f"{len(docs)} documents, {len(texts):,} distinct sequences encoded in {seconds:.0f} s ({args.backend})")
    row = {text: position for position, text in enumerate(texts)}
    found = {}
    for name, table in (("float32", vectors), ("float16", vectors.astype(np.float16).astype(np.float32))):
        started = time.perf_counter()
        pairs = mine_muss(docs, encode=lambda batch, table=table: table[[row[text] for text in batch]], config=config)
        found[name] = {(p.source_doc, p.source, p.target_doc, p.target): p.score for p in pairs}
        print(f"{name}: {len(found[name]):,} pairs in {time.perf_counter() - started:.0f} s")
    full, half = found["float32"], found["float16"]
    shared = full.keys() & half.keys()
    gap = max((abs(full[key] - half[key]) for key in shared), default=0.0)
    print(f"shared {len(shared):,}; only float32 {len(full.keys() - half.keys())}, only float16 {len(half.keys() - full.keys())}")
    print(f"largest margin difference of a shared pair: {gap:.2e}")
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rounded = unit.astype(np.float16).astype(np.float32)
    rounded /= np.linalg.norm(rounded, axis=1, keepdims=True)  # as the job's searches widen the halves
    k = config.k
    same = sum(len(set(a) & set(b)) for a, b in zip(exact_neighbours(unit, k), exact_neighbours(rounded, k)))
    print(f"recall@{k} of the float16 neighbours against the float32 ones: {same / (len(unit) * k):.4f}")
    d = vectors.shape[1]
    print(f"bytes a {d}-d vector takes in PostgreSQL (4-byte header, 4 of dimensions): vector {8 + 4 * d}, halfvec {8 + 2 * d}")


if __name__ == "__main__":
    main()
