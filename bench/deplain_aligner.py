"""The CRF aligner on DEplain-web dev: untrained calibration vs trained, document-level cross-validation.

    .venv/bin/python bench/deplain_aligner.py [--folds 4] [--seed 0] [--epochs 10] [--lr 0.05]
        [--measures embedding_cosine,tfidf_cosine,char3_tfidf_cosine] [--max-spans 3,1]

Needs ../shared/data/deplain-web-dev (44 German complex/simple pairs, manual n:m gold, no
paragraph breaks, so every document is one CRF block). For each measure, every pair's
similarity matrix is computed once and reused:

- untrained: the hand calibration of :class:`models_ml.aligning.aligner_config.AlignerConfig` (its
  null_score is set for MiniLM cosines; the lexical measures get the same values, as is);
  ``--max-spans`` runs the default CRF (spans of up to 3 complex sentences: merges) and
  the paper's single-sentence states (max_span 1; DEplain's gold is mostly 1:1 and 1:n);
- trained: the folds of ``bench/deplain_measures.py`` (same seeded permutation, fold =
  position % folds); each fold trains a fresh aligner on the other folds' documents
  (partial_threshold tuned on those too) and predicts the held-out documents.

Figures are sums over the held-out documents (micro-averages), identical pairs included as in
the published DEplain figures. The MASSalign line is the published full 147-pair test-set
figure (group level), for orientation only.

Below each measure's rows, the spread across folds: each held-out fold's own Task-1 F1
(pair and group level) for the untrained and the trained aligner, their mean with a 95%
t-interval (df = folds - 1), and the per-fold paired difference trained - untrained with its
95% t-interval (the same documents are scored by both, so the pairing removes the fold's
difficulty from the comparison). With 4 folds the intervals are wide: t(0.975, 3) = 3.18.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np
from scipy import stats

from bench.deplain_measures import DEPLAIN, PUBLISHED_MASSALIGN, document_folds
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.crf import CRFConfig
from models_ml.aligning.train import TrainingConfig, train_aligner
from models_ml.data.deplain import read_deplain
from models_ml.data.evaluate import EvaluationReport, evaluate_pairs
from models_ml.data.io import GoldPair
from models_ml.similarity.measures import build_measure

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
    fold_reports, notes = cross_validate_folds(pairs, matrices, config, training, folds, seed)
    return sum(fold_reports[1:], fold_reports[0]), notes


def cross_validate_folds(
    pairs: list[GoldPair], matrices: list[np.ndarray], config: AlignerConfig, training: TrainingConfig, folds: int, seed: int
) -> tuple[list[EvaluationReport], list[str]]:
    """Like :func:`cross_validate`, but one report per held-out fold (in fold order), not their sum."""
    fold_of = document_folds(len(pairs), folds, seed)
    reports = []
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
        reports.append(predict(aligner, pairs, matrices, test))
    return reports, notes


def untrained_folds(aligner: Aligner, pairs: list[GoldPair], matrices: list[np.ndarray], folds: int, seed: int) -> list[EvaluationReport]:
    """The untrained aligner's report on each held-out fold of :func:`cross_validate_folds` (same folds)."""
    fold_of = document_folds(len(pairs), folds, seed)
    return [predict(aligner, pairs, matrices, [k for k in range(len(pairs)) if fold_of[k] == fold]) for fold in range(folds)]


def t_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the two-sided t-interval of the mean (df = len - 1); nan width below 2 values."""
    sample = np.asarray(values, dtype=np.float64)  # (folds,)
    if sample.size < 2:
        return float(sample.mean()) if sample.size else float("nan"), float("nan")
    half = stats.t.ppf(0.5 + confidence / 2, df=sample.size - 1) * sample.std(ddof=1) / np.sqrt(sample.size)
    return float(sample.mean()), float(half)


def fold_lines(untrained: list[EvaluationReport], trained: list[EvaluationReport]) -> list[str]:
    """Per-fold Task-1 F1 (pair, group): mean +- 95% t-interval for both aligners and their paired difference."""
    lines = []
    levels = (("pair", lambda r: r.sentence_task1.f1), ("group", lambda r: r.group_task1.f1))
    for name, reports in (("untrained", untrained), ("trained", trained)):
        figures = []
        for level, f1 in levels:
            mean, half = t_interval([f1(report) for report in reports])
            per_fold = " ".join(f"{f1(report):.3f}" for report in reports)
            figures.append(f"T1 {level} F1 {mean:.3f} +- {half:.3f} [{per_fold}]")
        lines.append(f"    {name + ' fold mean':<28} " + " | ".join(figures))
    figures = []
    for level, f1 in levels:
        mean, half = t_interval([f1(after) - f1(before) for before, after in zip(untrained, trained)])
        figures.append(f"T1 {level} F1 {mean:+.3f} +- {half:.3f} (95% CI {mean - half:+.3f} .. {mean + half:+.3f})")
    lines.append(f"    {'trained - untrained, paired':<28} " + " | ".join(figures))
    return lines


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
    if args.folds < 2:
        sys.exit(f"--folds must be at least 2 (one held-out fold, the rest to train on), got {args.folds}")
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
        f"{'aligner':<32} {'T1 pair P/R/F1':<17} | {'T1 group P/R/F1':<17} | {'T2 pair P/R/F1':<17} | {'T2 group P/R/F1':<17} | {'s':>6}"
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
            untrained_reports = untrained_folds(Aligner(config, seed=args.seed), pairs, matrices, args.folds, args.seed)
            untrained = sum(untrained_reports[1:], untrained_reports[0])  # every document is in one held-out fold
            print(row(f"  span<={max_span} untrained", untrained, time.perf_counter() - start))
            start = time.perf_counter()
            trained_reports, notes = cross_validate_folds(pairs, matrices, config, training, args.folds, args.seed)
            trained = sum(trained_reports[1:], trained_reports[0])
            print(row(f"  span<={max_span} trained (CV)", trained, time.perf_counter() - start))
            print("\n".join(fold_lines(untrained_reports, trained_reports)), flush=True)
            fold_notes.extend(f"{name} span<={max_span} {note}" for note in notes)
    p, r, f = PUBLISHED_MASSALIGN
    print(f"{'MASSalign (published)':<32} {'':<17} | {p:5.3f} {r:5.3f} {f:5.3f} | full 147-pair test set, group level")
    print(
        "T1: aligned + partial vs not aligned; T2: aligned only. DEplain's gold has no partial label, so T2 "
        "differs from T1 only by groups the aligner labels partial. s: seconds of alignment (and training)."
    )
    print(
        f"fold mean: each held-out fold's own F1, mean +- half-width of the 95% t-interval (df {args.folds - 1}), "
        "per-fold values in brackets; paired: per-fold trained F1 - untrained F1 on the same documents."
    )
    for note in fold_notes:
        print(note)


if __name__ == "__main__":
    main()
