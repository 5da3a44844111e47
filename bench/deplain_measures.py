"""Each similarity measure alone as an aligner on DEplain-web dev, with document-level cross-validation.

    .venv/bin/python bench/deplain_measures.py [--folds 4] [--seed 0] [--measures jaccard,embedding_cosine,...]

Needs ../shared/data/deplain-web-dev (44 German complex/simple pairs, manual n:m gold,
no paragraph breaks). For every measure, the 44 pairs are split by document into
``--folds`` folds; the threshold is the one that maximises Task-1 sentence-pair F1 on
the *other* folds, then every pair scoring at or above it in the held-out fold is
linked, and linked sentences form n:m groups (connected components). No figure comes
from documents the threshold was chosen on. Identical pairs are included, as in the
published DEplain figures; the MASSalign line is the published figure on the full
147-pair test set, for orientation only (these 44 pairs are part of it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from models_ml.data.deplain import read_deplain
from models_ml.data.evaluate import EvaluationReport, evaluate_pairs, pair_labels_from_groups, threshold_sweep
from models_ml.data.io import AlignmentGroup, GoldPair, connected_groups
from models_ml.similarity.measures import build_measure

DEPLAIN = REPO_ROOT.parent / "shared" / "data" / "deplain-web-dev"
DEFAULT_MEASURES = (
    "jaccard",
    "tfidf_cosine",
    "char3_tfidf_cosine",
    "embedding_cosine",
    "word_average",
    "word_max",
    "word_hungarian",
    "word_movers",
)
PUBLISHED_MASSALIGN = (0.819, 0.509, 0.628)


def groups_from_links(matrix: np.ndarray, threshold: float) -> list[AlignmentGroup]:
    """Link every (simple j, complex i) scoring >= threshold; connected components become groups."""
    links = [(int(i), int(j), "aligned") for j, i in zip(*np.nonzero(matrix >= threshold))]
    return connected_groups(links)


def document_folds(count: int, folds: int, seed: int) -> dict[int, int]:
    """Fold of each document pair index: a seeded permutation, then position % folds."""
    order = np.random.default_rng(seed).permutation(count)
    return {int(index): k % folds for k, index in enumerate(order)}


def cross_validate(pairs: list[GoldPair], matrices: list[np.ndarray], folds: int, seed: int) -> tuple[EvaluationReport, list[float]]:
    fold_of = document_folds(len(pairs), folds, seed)
    labels = [pair_labels_from_groups(p.groups, len(p.simple_sentences), len(p.complex_sentences)) for p in pairs]
    total: EvaluationReport | None = None
    thresholds = []
    for fold in range(folds):
        train = [k for k in range(len(pairs)) if fold_of[k] != fold]
        test = [k for k in range(len(pairs)) if fold_of[k] == fold]
        sweep = threshold_sweep([matrices[k] for k in train], [labels[k] for k in train], task=1)
        thresholds.append(sweep.threshold)
        for k in test:
            pair = pairs[k]
            predicted = groups_from_links(matrices[k], sweep.threshold)
            report = evaluate_pairs(pair.groups, predicted, len(pair.simple_sentences), len(pair.complex_sentences))
            total = report if total is None else total + report
    assert total is not None
    return total, thresholds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--measures", default=",".join(DEFAULT_MEASURES))
    args = parser.parse_args()
    if not DEPLAIN.exists():
        sys.exit(f"{DEPLAIN} is missing: this benchmark needs ../shared/data/deplain-web-dev beside the checkout.")
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    print(
        f"DEplain-web dev: {len(pairs)} document pairs, {sum(len(p.groups) for p in pairs)} gold groups; "
        f"{args.folds}-fold document-level cross-validation of the threshold (seed {args.seed})"
    )
    header = f"{'measure':<22} {'pair P':>7} {'pair R':>7} {'pair F1':>7} | {'group P':>7} {'group R':>7} {'group F1':>8} | {'thresholds':<24} {'s':>5}"
    print(header)
    print("-" * len(header))
    for name in args.measures.split(","):
        measure = build_measure(name)
        start = time.perf_counter()
        matrices = [measure.score(p.simple_sentences, p.complex_sentences) for p in pairs]  # (m, n) each
        seconds = time.perf_counter() - start
        report, thresholds = cross_validate(pairs, matrices, args.folds, args.seed)
        pair_t1, group_t1 = report.sentence_task1, report.group_task1
        print(
            f"{name:<22} {pair_t1.precision:7.3f} {pair_t1.recall:7.3f} {pair_t1.f1:7.3f} | "
            f"{group_t1.precision:7.3f} {group_t1.recall:7.3f} {group_t1.f1:8.3f} | "
            f"{', '.join(f'{t:.3f}' for t in thresholds):<24} {seconds:5.1f}"
        )
    p, r, f = PUBLISHED_MASSALIGN
    print(f"{'MASSalign (published)':<22} {'':>7} {'':>7} {'':>7} | {p:7.3f} {r:7.3f} {f:8.3f} | full 147-pair test set")
    print("Task 1 (aligned + partial vs not aligned); DEplain has no partial label, so Task 2 gives the same figures.")


if __name__ == "__main__":
    main()
