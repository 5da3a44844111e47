"""The fine-tuned cross-encoder as an aligner on DEplain-web dev, with document-level cross-validation.

    .venv/bin/python bench/deplain_cross_encoder.py [--folds 4] [--seed 0] [--epochs 1]
        [--negatives-per-positive 3] [--max-train-examples 1200] [--device cpu]

Needs ../shared/data/deplain-web-dev (44 German complex/simple pairs, manual n:m gold).
The folds are those of bench/deplain_measures.py (``default_rng(seed).permutation``, fold =
position % folds). For every fold a fresh MiniLM pair classifier is fine-tuned on examples
from the *other* folds' documents (every gold pair, plus ``--negatives-per-positive``
random unaligned pairs per gold pair, at most ``--max-train-examples`` of them), then every
(simple, complex) pair of the held-out documents is scored with P(partial) + P(aligned).

Two ways to turn the out-of-fold scores into links, both then grouped into connected
components as in bench/deplain_measures.py:

* "threshold CV": that bench's threshold cross-validation over the out-of-fold matrices
  (the threshold of fold f maximises pair F1 on the other folds' documents; those were
  scored by models that saw fold f's documents in training, a small indirect leak);
* "fixed 0.5": the classifier's own decision, P(not not-aligned) >= 0.5; no tuning at all.

Cost: scoring is one transformer pass per sentence pair (22,018 pairs here); training is
75 steps of 16 pairs per fold with the defaults. ``--max-train-examples`` defaults to 1200
(of about 2,500 available per fold) to bound the time. Measured on 2 CPU cores shared with
other jobs (load average 4-5): 2023 s in all, 208-504 s of training and 32-35 pairs/s of
scoring per fold. An idle machine scores about 44 pairs/s (measured), so there the run
should take an estimated 13-15 minutes (not measured). On a GPU (``--device cuda``) more
epochs and all examples become affordable.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from bench.deplain_measures import (
    DEPLAIN,
    PUBLISHED_MASSALIGN,
    cross_validate,
    groups_from_links,
)
from models_ml.data.deplain import read_deplain
from models_ml.data.evaluate import PRF, EvaluationReport, evaluate_pairs
from models_ml.data.io import GoldPair
from models_ml.similarity.cross_encoder import CrossEncoderMeasure, PairClassifier
from models_ml.similarity.cross_encoder_training import PairTrainingConfig, pair_examples_from_groups, train_pair_classifier


def fold_assignment(count: int, folds: int, seed: int) -> list[int]:
    """Fold of each document pair, exactly as bench/deplain_measures.py assigns them."""
    order = np.random.default_rng(seed).permutation(count)
    fold_of = [0] * count
    for position, index in enumerate(order):
        fold_of[int(index)] = position % folds
    return fold_of


def training_examples(
    pairs: list[GoldPair], indices: list[int], negatives_per_positive: int, max_examples: int | None, seed: int
) -> list[tuple[str, str, str]]:
    examples = []
    for k in indices:
        pair = pairs[k]
        examples.extend(
            pair_examples_from_groups(
                pair.simple_sentences,
                pair.complex_sentences,
                pair.groups,
                negatives_per_positive=negatives_per_positive,
                seed=seed + k,
            )
        )
    if max_examples is not None and len(examples) > max_examples:
        keep = np.sort(np.random.default_rng(seed).choice(len(examples), size=max_examples, replace=False))
        examples = [examples[k] for k in keep.tolist()]
    return examples


def evaluate_fixed(pairs: list[GoldPair], matrices: list[np.ndarray], threshold: float) -> EvaluationReport:
    total: EvaluationReport | None = None
    for pair, matrix in zip(pairs, matrices):
        predicted = groups_from_links(matrix, threshold)
        report = evaluate_pairs(pair.groups, predicted, len(pair.simple_sentences), len(pair.complex_sentences))
        total = report if total is None else total + report
    assert total is not None
    return total


def _figures(prf: PRF) -> str:
    return f"{prf.precision:7.3f} {prf.recall:7.3f} {prf.f1:7.3f}"


def print_report(name: str, report: EvaluationReport, note: str) -> None:
    print(f"{name:<24} {'Task 1':<7} {_figures(report.sentence_task1)} | {_figures(report.group_task1)} | {note}")
    print(f"{'':<24} {'Task 2':<7} {_figures(report.sentence_task2)} | {_figures(report.group_task2)} |")


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--negatives-per-positive", type=int, default=3)
    parser.add_argument("--max-train-examples", type=int, default=1200, help="0 = use every example")
    parser.add_argument("--batch-size", type=int, default=16, help="training batch size")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if not DEPLAIN.exists():
        sys.exit(f"{DEPLAIN} is missing: this benchmark needs ../shared/data/deplain-web-dev beside the checkout.")
    if args.folds < 2:
        sys.exit(f"--folds must be >= 2, got {args.folds}")
    started = time.perf_counter()
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    fold_of = fold_assignment(len(pairs), args.folds, args.seed)
    print(
        f"DEplain-web dev: {len(pairs)} document pairs, {sum(len(p.groups) for p in pairs)} gold groups, "
        f"{sum(len(p.simple_sentences) * len(p.complex_sentences) for p in pairs)} sentence pairs; "
        f"{args.folds}-fold document-level cross-validation (seed {args.seed}), device {args.device}"
    )
    print(
        f"fine-tuning: {args.epochs} epoch(s), batch {args.batch_size}, {args.negatives_per_positive} negatives "
        f"per positive, at most {args.max_train_examples or 'all'} examples per fold",
        flush=True,
    )
    training = PairTrainingConfig(epochs=args.epochs, batch_size=args.batch_size)
    matrices: list[np.ndarray | None] = [None] * len(pairs)
    for fold in range(args.folds):
        train = [k for k in range(len(pairs)) if fold_of[k] != fold]
        test = [k for k in range(len(pairs)) if fold_of[k] == fold]
        examples = training_examples(pairs, train, args.negatives_per_positive, args.max_train_examples or None, args.seed + 1000 * fold)
        fold_start = time.perf_counter()
        model = PairClassifier(seed=args.seed)
        losses = train_pair_classifier(model, examples, training, seed=args.seed, device=args.device)
        trained = time.perf_counter()
        measure = CrossEncoderMeasure(model, device=args.device)
        for k in test:
            matrices[k] = measure.score(pairs[k].simple_sentences, pairs[k].complex_sentences)  # (m, n)
        scored = time.perf_counter()
        test_pairs = sum(len(pairs[k].simple_sentences) * len(pairs[k].complex_sentences) for k in test)
        print(
            f"fold {fold}: trained on {len(examples)} examples from {len(train)} documents in "
            f"{trained - fold_start:.0f} s (loss per epoch {', '.join(f'{l:.3f}' for l in losses)}); scored "
            f"{test_pairs} pairs of {len(test)} documents in {scored - trained:.0f} s "
            f"({test_pairs / max(scored - trained, 1e-9):.0f} pairs/s)",
            flush=True,
        )
    scores = [matrix for matrix in matrices if matrix is not None]
    assert len(scores) == len(pairs)
    cv_report, thresholds = cross_validate(pairs, scores, args.folds, args.seed)
    fixed_report = evaluate_fixed(pairs, scores, 0.5)
    header = f"{'linking':<24} {'':<7} {'pair P':>7} {'pair R':>7} {'pair F1':>7} | {'group P':>7} {'group R':>7} {'grp F1':>7} |"
    print(header)
    print("-" * (len(header) + 24))
    print_report("threshold CV", cv_report, "thresholds " + ", ".join(f"{t:.3f}" for t in thresholds))
    print_report("fixed 0.5", fixed_report, "")
    p, r, f = PUBLISHED_MASSALIGN
    print(f"{'MASSalign (published)':<24} {'Task 1':<7} {'':>7} {'':>7} {'':>7} | {p:7.3f} {r:7.3f} {f:7.3f} | full 147-pair test set")
    print("DEplain has no partial label and every link is labelled aligned, so Task 2 repeats Task 1.")
    print(f"wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
