"""Aligners per domain on DEplain-web dev: leave one domain out, document-level CV, shapes, peers, feature time.

    .venv/bin/python bench/deplain_domains.py [--folds 4] [--seed 0] [--no-embeddings]

Needs ../shared/data/deplain-web-dev (56 German pairs in four domains, manual n:m gold). Every
figure is on documents the scored model never trained on, identical pairs included (DEplain's
own scoring): a predicted group counts only when its complex and simple sentence sets both equal
a gold group's.

Protocols:
- leave one domain out (the headline): train on the other three domains, score the held-out one;
- document-level CV: the 56 pairs in ``--folds`` seeded folds, each fold scored by a model
  trained on the others; figures are then split by domain.

Systems (the trained ones use the CLI's recipe: a fifth of the training pairs for early stopping):
- char 3-gram TF-IDF arg-max >= 0.5, no CRF (the ten-line baseline) and Gale–Church length
  alignment (models_ml.aligning.baselines): no training;
- the previous default: untrained, hand-calibrated MiniLM cosine, spans <= 3;
- char 3-gram CRF, single-sentence states, trained (the previous best configuration);
- the learned pair scorer + CRF, lexical features only, and with MiniLM cosines.
bertalign is not in the run: its PyPI release needs Python >= 3.12 (a ``type`` statement in
bertalign/aligner.py is a syntax error on 3.11) and the only CPU build of torch here is for 3.11.

Then: the shape table of the shipped configuration (learned, lexical) under both protocols, and the time of the
lexical features against the encoder's on the same pairs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench._deplain import DOMAINS, Corpus, load_corpus, train_learned, train_measure_crf
from bench.deplain_measures import document_folds
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.baselines import argmax_baseline, gale_church_align
from models_ml.data.evaluate import EvaluationReport, evaluate_pairs, format_shape_table, shape_table
from models_ml.data.io import AlignmentGroup

Predict = Callable[[list[int], list[int]], dict[int, list[AlignmentGroup]]]  # (train, test) -> groups per test pair


def untrained(corpus: Corpus, matrices: list[np.ndarray] | None, predict: Callable[[int], list[AlignmentGroup]]) -> Predict:
    return lambda train, test: {k: predict(k) for k in test}


def aligner_groups(aligner: Aligner, corpus: Corpus, matrices: list[np.ndarray], test: list[int]) -> dict[int, list[AlignmentGroup]]:
    out = {}
    for k in test:
        pair = corpus.pairs[k]
        out[k] = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=matrices[k]).groups
    return out


def learned_system(corpus: Corpus, embedding: bool, seed: int) -> Predict:
    def predict(train: list[int], test: list[int]) -> dict[int, list[AlignmentGroup]]:
        aligner = train_learned(corpus, train, embedding=embedding, seed=seed)
        features = corpus.with_embedding if embedding else corpus.lexical
        assert features is not None
        return aligner_groups(aligner, corpus, [aligner.measure.logits(f) for f in features], test)  # type: ignore[attr-defined]

    return predict


def systems(corpus: Corpus, seed: int) -> dict[str, Predict]:
    assert corpus.lexical is not None
    char3 = [f[..., 0] for f in corpus.lexical]  # the char3_cosine feature is the char 3-gram TF-IDF measure
    found: dict[str, Predict] = {
        "char3 arg-max >= 0.5": untrained(corpus, char3, lambda k: argmax_baseline(char3[k], 0.5)),
        "Gale-Church": untrained(
            corpus, None, lambda k: gale_church_align(corpus.pairs[k].complex_sentences, corpus.pairs[k].simple_sentences)
        ),
        "char3 CRF, trained": lambda train, test: aligner_groups(
            train_measure_crf(corpus, char3, train, measure="char3_tfidf_cosine", seed=seed), corpus, char3, test
        ),
        "learned, lexical": learned_system(corpus, False, seed),
    }
    if corpus.cosine is not None:
        cosine = corpus.cosine
        old_default = Aligner(AlignerConfig(device="cpu"), seed=seed)
        found["previous default (MiniLM)"] = untrained(corpus, cosine, lambda k: aligner_groups(old_default, corpus, cosine, [k])[k])
        found["learned, lexical+MiniLM"] = learned_system(corpus, True, seed)
    return found


def run_protocol(corpus: Corpus, predict: Predict, splits: list[tuple[list[int], list[int]]]) -> dict[int, list[AlignmentGroup]]:
    groups: dict[int, list[AlignmentGroup]] = {}
    for train, test in splits:
        groups.update(predict(train, test))
    return groups


def report(corpus: Corpus, groups: dict[int, list[AlignmentGroup]], indices: list[int]) -> EvaluationReport | None:
    total = None
    for k in indices:
        pair = corpus.pairs[k]
        one = evaluate_pairs(pair.groups, groups[k], len(pair.simple_sentences), len(pair.complex_sentences))
        total = one if total is None else total + one
    return total


def print_table(title: str, corpus: Corpus, results: dict[str, dict[int, list[AlignmentGroup]]]) -> None:
    print(f"\n{title}: group F1 per domain (P / R), then all pairs; pair-level Task-1 F1 last")
    header = f"{'system':28s}" + "".join(f"{d:>20s}" for d in DOMAINS) + f"{'all: P / R / F1':>24s}{'pair F1':>9s}"
    print(header)
    everything = list(range(len(corpus.pairs)))
    for name, groups in results.items():
        cells = []
        for domain in DOMAINS:
            r = report(corpus, groups, corpus.indices(domain))
            assert r is not None
            g = r.group_task1
            cells.append(f"{g.f1:.3f} ({g.precision:.2f}/{g.recall:.2f})")
        total = report(corpus, groups, everything)
        assert total is not None
        g = total.group_task1
        print(f"{name:28s}" + "".join(f"{c:>20s}" for c in cells) + f"{g.precision:>10.3f} / {g.recall:.3f} / {g.f1:.3f}"
              + f"{total.sentence_task1.f1:>9.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-embeddings", action="store_true", help="skip MiniLM (the previous default and the MiniLM scorer)")
    args = parser.parse_args()
    corpus = load_corpus(embeddings=not args.no_embeddings)
    print(f"{len(corpus.pairs)} pairs: " + ", ".join(f"{d} {len(corpus.indices(d))}" for d in DOMAINS))
    lodo = [([k for k in range(len(corpus.pairs)) if corpus.domains[k] != d], corpus.indices(d)) for d in DOMAINS]
    fold_of = document_folds(len(corpus.pairs), args.folds, args.seed)
    folds = [([k for k in fold_of if fold_of[k] != f], [k for k in fold_of if fold_of[k] == f]) for f in range(args.folds)]
    found = systems(corpus, args.seed)
    for title, splits in (("Leave one domain out", lodo), (f"Document-level CV ({args.folds} folds, pooled)", folds)):
        results = {name: run_protocol(corpus, predict, splits) for name, predict in found.items()}
        print_table(title, corpus, results)
        best = "learned, lexical"  # the configuration shipped as the default model
        for domain in DOMAINS:
            table = shape_table((corpus.pairs[k].groups, results[best][k]) for k in corpus.indices(domain))
            print(f"\n{title}, {best}, {domain}: gold groups of each shape (complex:simple) and how many came out exactly")
            print(format_shape_table(table))
    if corpus.cosine is not None:
        print(f"\ntime on all {len(corpus.pairs)} pairs: lexical features {corpus.feature_seconds:.2f} s, "
              f"MiniLM encoder {corpus.encoder_seconds:.2f} s ({corpus.feature_seconds / corpus.encoder_seconds:.1%} of it)")  # fmt: skip


if __name__ == "__main__":
    main()
