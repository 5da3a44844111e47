"""The CRF aligner on DEplain-web dev: untrained calibration vs trained, document-level cross-validation.

    .venv/bin/python bench/deplain_aligner.py [--folds 4] [--seed 0] [--epochs 10] [--lr 0.05]
        [--measures embedding_cosine,tfidf_cosine,char3_tfidf_cosine] [--max-spans 3,1]

Needs ../shared/data/deplain-web-dev (44 German complex/simple pairs, manual n:m gold, no
paragraph breaks, so every document is one CRF block). For each measure, every pair's
similarity matrix is computed once and reused:

- untrained: the hand calibration of :class:`models_ml.aligner.AlignerConfig` (its
  null_score is set for MiniLM cosines; the lexical measures get the same values, as is);
  ``--max-spans`` runs the default CRF (spans of up to 3 complex sentences: merges) and
  the paper's single-sentence states (max_span 1; DEplain's gold is mostly 1:1 and 1:n);
- trained: the folds of ``bench/deplain_measures.py`` (same seeded permutation, fold =
  position % folds); each fold trains a fresh aligner on the other folds' documents
  (partial_threshold tuned on those too) and predicts the held-out documents.

Figures are sums over the held-out documents (micro-averages), identical pairs included as in
the published DEplain figures. The MASSalign line is the published full 147-pair test-set
figure (group level), for orientation only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from bench.deplain_measures import DEPLAIN, PUBLISHED_MASSALIGN, document_folds
from models_ml.aligner import Aligner, AlignerConfig
from models_ml.crf import CRFConfig
from models_ml.evaluate import EvaluationReport, evaluate_pairs
from models_ml.io import GoldPair, read_deplain
from models_ml.similarity import build_measure
from models_ml.train import TrainingConfig, train_aligner

DEFAULT_MEASURES = ("embedding_cosine", "tfidf_cosine", "char3_tfidf_cosine")


def predict(aligner: Aligner, pairs: list[GoldPair], matrices: list[np.ndarray], indices: list[int]) -> EvaluationReport:
    """Align the given pairs from their precomputed (m, n) matrices and sum the evaluation."""
    total: EvaluationReport | None = None
    for k in indices:
        pair = pairs[k]
        result = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=matrices[k])
        report = evaluate_pairs(pair.groups, result.groups, len(pair.simple_sentences), len(pair.complex_sentences))
        total = report if total is None else total + report
    assert total is not None
    return total


def cross_validate(
    pairs: list[GoldPair], matrices: list[np.ndarray], config: AlignerConfig, training: TrainingConfig, folds: int, seed: int
) -> tuple[EvaluationReport, list[str]]:
    """Train on all folds but one, predict that one; returns the summed report and one note per fold."""
    fold_of = document_folds(len(pairs), folds, seed)
    total: EvaluationReport | None = None
    notes = []
    for fold in range(folds):
        train = [k for k in range(len(pairs)) if fold_of[k] != fold]
        test = [k for k in range(len(pairs)) if fold_of[k] == fold]
        aligner = Aligner(config, seed=seed)
        run = train_aligner(
            [pairs[k] for k in train], aligner=aligner, training=training, seed=seed,
            similarities=[matrices[k] for k in train],
        )  # fmt: skip
        notes.append(
            f"fold {fold}: LL {run.initial_log_likelihood:.1f} -> {run.final_log_likelihood:.1f}, "
            f"partial_threshold {run.partial_threshold:.2f}, {len(run.skipped_blocks)} skipped, "
            f"{run.gold_pairs_beyond_span} gold pairs beyond max_span"
        )
        report = predict(aligner, pairs, matrices, test)
        total = report if total is None else total + report
    assert total is not None
    return total, notes


def row(name: str, report: EvaluationReport, seconds: float) -> str:
    figures = []
    for prf in (report.sentence_task1, report.group_task1, report.sentence_task2, report.group_task2):
        figures.append(f"{prf.precision:5.3f} {prf.recall:5.3f} {prf.f1:5.3f}")
    return f"{name:<32} " + " | ".join(figures) + f" | {seconds:6.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=TrainingConfig.epochs)
    parser.add_argument("--lr", type=float, default=TrainingConfig.lr)
    parser.add_argument("--measures", default=",".join(DEFAULT_MEASURES))
    parser.add_argument("--max-spans", default="3,1", help="CRF max_span values to compare")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if not DEPLAIN.exists():
        sys.exit(f"{DEPLAIN} is missing: this benchmark needs ../shared/data/deplain-web-dev beside the checkout.")
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    training = TrainingConfig(epochs=args.epochs, lr=args.lr)
    print(
        f"DEplain-web dev: {len(pairs)} document pairs, {sum(len(p.groups) for p in pairs)} gold groups; "
        f"CRF aligner untrained and trained ({args.folds}-fold document-level CV, seed {args.seed}, "
        f"{training.epochs} epochs, lr {training.lr})"
    )
    header = (
        f"{'aligner':<32} {'T1 pair P/R/F1':<17} | {'T1 group P/R/F1':<17} | "
        f"{'T2 pair P/R/F1':<17} | {'T2 group P/R/F1':<17} | {'s':>6}"
    )
    print(header)
    print("-" * len(header))
    fold_notes = []
    for name in args.measures.split(","):
        start = time.perf_counter()
        measure = build_measure(name) if name != "embedding_cosine" else build_measure(name, device=args.device)
        matrices = [measure.score(p.simple_sentences, p.complex_sentences) for p in pairs]  # (m, n) each
        scoring = time.perf_counter() - start
        print(f"{name}: similarity matrices in {scoring:.1f} s")
        for max_span in (int(value) for value in args.max_spans.split(",")):
            config = AlignerConfig(measure=name, device=args.device, crf=CRFConfig(max_span=max_span))
            start = time.perf_counter()
            untrained = predict(Aligner(config, seed=args.seed), pairs, matrices, list(range(len(pairs))))
            print(row(f"  span<={max_span} untrained", untrained, time.perf_counter() - start))
            start = time.perf_counter()
            trained, notes = cross_validate(pairs, matrices, config, training, args.folds, args.seed)
            print(row(f"  span<={max_span} trained (CV)", trained, time.perf_counter() - start), flush=True)
            fold_notes.extend(f"{name} span<={max_span} {note}" for note in notes)
    p, r, f = PUBLISHED_MASSALIGN
    print(f"{'MASSalign (published)':<32} {'':<17} | {p:5.3f} {r:5.3f} {f:5.3f} | full 147-pair test set, group level")
    print("T1: aligned + partial vs not aligned; T2: aligned only. DEplain's gold has no partial label, so T2 "
          "differs from T1 only by groups the aligner labels partial. s: seconds of alignment (and training).")
    for note in fold_notes:
        print(note)


if __name__ == "__main__":
    main()
