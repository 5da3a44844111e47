"""Simulated annotator on DEplain-web dev: reveal gold document pairs in random vs uncertainty order.

    .venv/bin/python bench/deplain_active_learning.py [--k 3] [--folds 4] [--seed 0] [--epochs 10]
        [--measure embedding_cosine] [--uncertainty entropy|margin] [--top-k 3]
        [--plot docs/active_learning.svg] [--target 0.95]

Needs ../shared/data/deplain-web-dev (44 German complex/simple pairs, manual n:m gold, no
paragraph breaks). Every pair's (m, n) similarity matrix is computed once, with the app's
default measure (``AlignerConfig().measure``) unless ``--measure`` says otherwise.

Held-out documents: the folds of ``bench/deplain_measures.py`` (seeded permutation, fold =
position % folds). Each fold in turn is the test set; the other folds are the pool the
simulated annotator labels. For each order, starting from 0 labelled pairs (the untrained,
hand-calibrated aligner), ``--k`` pool pairs are revealed at a time; after every reveal a
FRESH aligner (same seed, default ``TrainingConfig`` unless ``--epochs``) is trained on all
revealed pairs and scored on the held-out fold: group-level Task-1 F1, micro-summed over the
fold's documents (``bench/deplain_aligner.predict``). This goes on until the pool is empty,
so the last point (the whole pool) is the same model for both orders.

- random: a seeded permutation of the pool (one per fold).
- uncertainty: before each reveal the current model (untrained at step 0) aligns every
  unrevealed pool pair, and the ``--k`` pairs with the highest document uncertainty
  (:func:`models_ml.aligning.uncertainty.document_uncertainty`, ``--uncertainty``) are revealed.

Candidate marginals (what the document uncertainty averages): the CRF pair marginal
(``AlignmentResult.pair_marginals[j, i]``) of every candidate pair the app would store for
this document pair, i.e. ``alignment.aligning.scoring.select_candidates`` with
``top_k = --top-k`` (the app's TOP_K is 3): each simple sentence's top-k complex sentences by
similarity, each complex sentence's most similar simple sentence, every cell with marginal
>= 0.05 and the pairs of the predicted groups. These are exactly the ``crf_marginal`` values
the annotation queue sorts by, so the document score is computable from what the app stores.

Reported per number of labelled pairs: the mean across folds of the held-out F1, the
standard deviation across folds (the shaded band in the plot), and the per-fold paired
difference uncertainty - random with its 95% t-interval (df = folds - 1). At the end: how
many labelled pairs each order needed for its mean F1 to reach ``--target`` (default 95%)
of the full-pool F1, and ``--target`` of the gain from the untrained to the full-pool F1
(the first is met at 0 labels when the untrained aligner is already that good).

Runtime with the defaults on 2 CPU cores: about a minute of encoding (MiniLM) plus about
3 to 5 minutes of training (4 folds x 2 orders x 11 steps, 10 epochs each; the start and the
full pool are trained once per fold). ``--k 6`` or ``--epochs 5`` roughly halve the training.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np

from alignment.aligning.scoring import select_candidates
from bench._svg import LineChart, Series, write_line_chart
from bench.deplain_aligner import predict, t_interval
from bench.deplain_measures import DEPLAIN, document_folds
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.train import TrainingConfig, train_aligner
from models_ml.aligning.uncertainty import METHODS, document_uncertainty
from models_ml.data.deplain import read_deplain
from models_ml.data.io import GoldPair
from models_ml.similarity.measures import build_measure

ORDERS = ("random", "uncertainty")
DEFAULT_PLOT = REPO_ROOT / "docs" / "active_learning.svg"


@dataclass(frozen=True)
class Experiment:
    """One simulated-annotator setting; the data (pairs, matrices) are passed alongside, not stored here.

    k: pool pairs revealed per step; folds / seed: the held-out split and every model's seed;
    uncertainty: "entropy" | "margin"; top_k: candidates per simple sentence, as in the app.
    """

    config: AlignerConfig
    training: TrainingConfig
    k: int = 3
    folds: int = 4
    seed: int = 0
    uncertainty: str = "entropy"
    top_k: int = 3

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.folds < 2:
            raise ValueError(f"folds must be >= 2 (one held out, the rest the pool), got {self.folds}")
        if self.uncertainty not in METHODS:
            raise ValueError(f"unknown uncertainty method {self.uncertainty!r}; methods: {', '.join(METHODS)}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")


@dataclass
class Curve:
    """One order on one fold: held-out group F1 after each reveal. labelled[s] pairs known at step s.

    sentences[s]: simple sentences in those pairs, because an order that picks long documents
    gets more gold per "labelled pair" (and costs an annotator more).
    """

    order: str
    fold: int
    labelled: list[int]
    f1: list[float]
    sentences: list[int]
    revealed: list[int]  # pool pair indices in the order they were revealed


class FoldModels:
    """Trained aligners of one fold, keyed by the sorted set of revealed pairs.

    Training depends only on the set (pairs are passed sorted, with a fixed seed), so the
    untrained start and the full pool are trained once and shared by both orders.
    """

    def __init__(self, pairs: list[GoldPair], matrices: list[np.ndarray], experiment: Experiment, test: list[int]) -> None:
        self.pairs, self.matrices, self.experiment, self.test = pairs, matrices, experiment, test
        self._cache: dict[tuple[int, ...], tuple[Aligner, float]] = {}
        self.trainings = 0

    def model(self, revealed: list[int]) -> tuple[Aligner, float]:
        """(aligner trained on ``revealed``, its held-out group Task-1 F1); untrained when ``revealed`` is empty."""
        key = tuple(sorted(revealed))
        if key not in self._cache:
            aligner = Aligner(self.experiment.config, seed=self.experiment.seed)
            if key:
                train_aligner(
                    [self.pairs[k] for k in key], aligner=aligner, training=self.experiment.training,
                    seed=self.experiment.seed, similarities=[self.matrices[k] for k in key],
                )  # fmt: skip
                self.trainings += 1
            f1 = predict(aligner, self.pairs, self.matrices, self.test).group_task1.f1
            self._cache[key] = (aligner, f1)
        return self._cache[key]


def candidate_marginals(aligner: Aligner, pair: GoldPair, similarity: np.ndarray, top_k: int) -> np.ndarray:
    """CRF marginals (c,) of the c candidate pairs the app would store for this pair (see the module docstring)."""
    result = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=similarity)
    candidates = select_candidates(result, {aligner.config.measure: similarity}, aligner.config.measure, top_k)
    return np.array([candidate.crf_marginal for candidate in candidates], dtype=np.float64)  # (c,)


def most_uncertain(
    aligner: Aligner, pairs: list[GoldPair], matrices: list[np.ndarray], unrevealed: list[int], experiment: Experiment
) -> list[int]:
    """The ``experiment.k`` unrevealed pairs the aligner is least sure about (ties: lower index first)."""
    scores = {
        k: document_uncertainty(candidate_marginals(aligner, pairs[k], matrices[k], experiment.top_k), experiment.uncertainty)
        for k in unrevealed
    }
    return sorted(unrevealed, key=lambda k: (-scores[k], k))[: experiment.k]


def simulate(order: str, pool: list[int], models: FoldModels, fold: int) -> Curve:
    """Reveal the pool ``k`` pairs at a time in the given order; score a fresh model after each reveal."""
    experiment = models.experiment
    permutation = [pool[i] for i in np.random.default_rng(experiment.seed + fold).permutation(len(pool))]
    revealed: list[int] = []
    aligner, f1 = models.model(revealed)
    curve = Curve(order, fold, [0], [f1], [0], [])
    while len(revealed) < len(pool):
        unrevealed = [k for k in pool if k not in revealed]
        if order == "random":
            chosen = [k for k in permutation if k not in revealed][: experiment.k]
        else:
            chosen = most_uncertain(aligner, models.pairs, models.matrices, unrevealed, experiment)
        revealed += chosen
        aligner, f1 = models.model(revealed)
        curve.labelled.append(len(revealed))
        curve.sentences.append(sum(len(models.pairs[k].simple_sentences) for k in revealed))
        curve.f1.append(f1)
    curve.revealed = revealed
    return curve


def run_experiment(pairs: list[GoldPair], matrices: list[np.ndarray], experiment: Experiment, say: Callable[[str], None]) -> list[Curve]:
    """Both orders on every fold; one Curve per (fold, order)."""
    fold_of = document_folds(len(pairs), experiment.folds, experiment.seed)
    curves = []
    for fold in range(experiment.folds):
        start = time.perf_counter()
        test = [k for k in range(len(pairs)) if fold_of[k] == fold]
        pool = [k for k in range(len(pairs)) if fold_of[k] != fold]
        models = FoldModels(pairs, matrices, experiment, test)
        for order in ORDERS:
            curves.append(simulate(order, pool, models, fold))
        say(
            f"fold {fold}: {len(test)} held-out pairs, pool of {len(pool)}; {models.trainings} trainings in "
            f"{time.perf_counter() - start:.1f} s; uncertainty order revealed {curves[-1].revealed[: 2 * experiment.k]} first"
        )
    return curves


@dataclass
class Point:
    """Across folds, at one number of labelled pairs: per order the fold values, and the paired difference."""

    labelled: int
    values: dict[str, list[float]]  # order -> held-out F1 of each fold that has this point
    sentences: dict[str, list[int]]  # order -> simple sentences labelled, per fold


def aggregate(curves: list[Curve]) -> list[Point]:
    """Group the curves' points by number of labelled pairs (folds with unequal pools end at different counts)."""
    points: dict[int, Point] = {}
    for curve in curves:
        for labelled, f1, sentences in zip(curve.labelled, curve.f1, curve.sentences):
            point = points.setdefault(labelled, Point(labelled, {order: [] for order in ORDERS}, {order: [] for order in ORDERS}))
            point.values[curve.order].append(f1)
            point.sentences[curve.order].append(sentences)
    return [points[labelled] for labelled in sorted(points)]


def labels_to_reach(points: list[Point], order: str, target: float) -> int | None:
    """Fewest labelled pairs at which the order's mean F1 is >= target (None if never)."""
    return next((p.labelled for p in points if p.values[order] and np.mean(p.values[order]) >= target), None)


def labels_needed_lines(points: list[Point], target: float) -> str:
    """Per order, the labelled pairs needed to reach ``target`` (mean F1), and which order needed fewer."""
    needed = {order: labels_to_reach(points, order, target) for order in ORDERS}
    lines = [f"  {order:<12} reaches it with {'never' if needed[order] is None else needed[order]} labelled pairs" for order in ORDERS]
    reached = {order: count for order, count in needed.items() if count is not None}
    if not reached or (len(reached) == len(ORDERS) and len(set(reached.values())) == 1):
        lines.append("  fewer labels: neither order")
    else:
        lines.append(f"  fewer labels: {min(reached, key=lambda order: reached[order])} order")
    return "\n".join(lines)


def table(points: list[Point]) -> list[str]:
    header = (
        f"{'labelled pairs':>14} | {'random F1 mean +- sd':>20} | {'uncertainty F1 mean +- sd':>25} | "
        f"{'unc - rand (paired, 95% CI)':>30} | {'simple sents rand / unc':>23} | folds"
    )
    lines = [header, "-" * len(header)]
    for point in points:
        cells = []
        for order in ORDERS:
            values = point.values[order]
            spread = np.std(values, ddof=1) if len(values) > 1 else float("nan")
            cells.append(f"{np.mean(values):.3f} +- {spread:.3f}")
        mean, half = t_interval([u - r for u, r in zip(point.values["uncertainty"], point.values["random"])])
        lines.append(
            f"{point.labelled:>14} | {cells[0]:>20} | {cells[1]:>25} | {f'{mean:+.3f} +- {half:.3f}':>30} | "
            f"{f'{np.mean(point.sentences[ORDERS[0]]):.0f} / {np.mean(point.sentences[ORDERS[1]]):.0f}':>23} | {len(point.values['random'])}"
        )
    return lines


def plot(points: list[Point], experiment: Experiment, path: Path, pair_count: int) -> Path:
    """Mean held-out F1 per order, with a band of +- one standard deviation across folds."""
    series = []
    for order in ORDERS:
        kept = [p for p in points if p.values[order]]
        means = np.array([np.mean(p.values[order]) for p in kept])  # (points,)
        sds = np.array([np.std(p.values[order], ddof=1) if len(p.values[order]) > 1 else 0.0 for p in kept])  # (points,)
        name = "random order" if order == "random" else f"uncertainty order ({experiment.uncertainty})"
        series.append(Series(name, [p.labelled for p in kept], means.tolist(), (means - sds).tolist(), (means + sds).tolist()))
    chart = LineChart(
        title=f"Simulated annotator on DEplain-web dev ({pair_count} pairs, {experiment.folds}-fold held-out)",
        x_label="labelled document pairs (revealed from the pool)",
        y_label="held-out group-level Task-1 F1",
        series=series,
        note=(
            f"mean over {experiment.folds} held-out folds, band: +- 1 sd across folds; {experiment.k} pairs per step, "
            f"fresh CRF trained {experiment.training.epochs} epochs per step; {experiment.config.measure}, seed {experiment.seed}"
        ),
    )
    return write_line_chart(chart, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=3, help="pool pairs revealed per step")
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=TrainingConfig.epochs)
    parser.add_argument("--measure", default=AlignerConfig().measure)
    parser.add_argument("--uncertainty", default="entropy", choices=METHODS)
    parser.add_argument("--top-k", type=int, default=3, help="candidates per simple sentence (the app's TOP_K)")
    parser.add_argument("--target", type=float, default=0.95, help="fraction of the full-pool F1 to reach")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PLOT)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if not DEPLAIN.exists():
        sys.exit(f"{DEPLAIN} is missing: this benchmark needs ../shared/data/deplain-web-dev beside the checkout.")
    if not 0.0 < args.target <= 1.0:
        sys.exit(f"--target must lie in (0, 1], got {args.target}")
    try:
        experiment = Experiment(
            config=AlignerConfig(measure=args.measure, device=args.device),
            training=TrainingConfig(epochs=args.epochs),
            k=args.k, folds=args.folds, seed=args.seed, uncertainty=args.uncertainty, top_k=args.top_k,
        )  # fmt: skip
    except ValueError as error:
        sys.exit(f"bad arguments: {error}")
    started = time.perf_counter()
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    print(
        f"DEplain-web dev: {len(pairs)} document pairs; {experiment.folds} held-out folds (seed {experiment.seed}); "
        f"{experiment.k} pairs per step; {experiment.training.epochs} epochs per training; measure {args.measure}; "
        f"uncertainty {experiment.uncertainty} over the app's candidates (top_k {experiment.top_k})"
    )
    measure = build_measure(args.measure, device=args.device) if args.measure == "embedding_cosine" else build_measure(args.measure)
    matrices = [measure.score(p.simple_sentences, p.complex_sentences) for p in pairs]  # (m, n) each
    print(f"similarity matrices in {time.perf_counter() - started:.1f} s", flush=True)
    curves = run_experiment(pairs, matrices, experiment, lambda line: print(line, flush=True))
    points = aggregate(curves)
    print("\n".join(table(points)))
    path = plot(points, experiment, args.plot, len(pairs))
    full = float(np.mean(points[-1].values["random"] + points[-1].values["uncertainty"]))
    target = args.target * full
    print(f"untrained (0 labelled): {np.mean(points[0].values['random']):.3f}; full pool ({points[-1].labelled} labelled): {full:.3f}")
    print(f"target {args.target:.0%} of the full-pool F1 = {target:.3f}")
    print(labels_needed_lines(points, target))
    untrained = float(np.mean(points[0].values["random"]))
    gain_target = untrained + args.target * (full - untrained)
    print(f"target {args.target:.0%} of the gain from untrained to full pool = {gain_target:.3f}")
    print(labels_needed_lines(points, gain_target))
    print(
        "sd: standard deviation across folds; paired: per-fold uncertainty F1 - random F1 on the same held-out "
        f"documents, 95% t-interval (df {experiment.folds - 1}); F1: group-level Task 1, micro-summed per fold; "
        "simple sents: mean simple sentences in the labelled pairs (annotation effort)."
    )
    print(f"plot: {path}; total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
