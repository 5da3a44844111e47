"""The learning loop in a new domain: label k pairs of it, retrain, score the rest of the domain.

    .venv/bin/python bench/deplain_learning_loop.py [--draws 8] [--seed 0] [--domains fiction,health] [--plot FILE.svg] [--no-pool]

Needs ../shared/data/deplain-web-dev. The starting model is the shipped recipe (learned scorer +
CRF, lexical features) trained on the language-learner and bible pairs. For a new domain with six
pairs, each draw permutes them: the last three are the test documents of that draw, and k = 0, 1, 3
of the first three are labelled (the same test documents for every k of a draw, so differences are
paired). k = 6 would leave nothing to score: the domain has six pairs.

Two ways to use the k labels, both scored on the same documents:
- *adapt* (``models_ml.aligning.adapt.adapt_aligner``, what the app's automatic adaptation does): fine-tuned
  copies of the starting model on the new pairs only, one per scorer prior (10, 100, 1,000), each judged
  leave-one-pair-out on the labelled pairs; a copy is kept only when it beats the start there (the guard),
  else the start is kept;
- *pool* (the loop before): retrain from zero on the old pairs plus the k new ones, with early
  stopping on a fifth of that pool.

Printed per domain and k: mean group F1 over the draws with a 95% t-interval, and the paired
difference to k = 0 with its interval.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from scipy import stats

from bench._deplain import Corpus, load_corpus, score_learned, train_learned
from models_ml.aligning.adapt import adapt_aligner
from models_ml.aligning.aligner import Aligner

KS = (0, 1, 3)


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval."""
    array = np.asarray(values, dtype=float)
    if len(array) < 2:
        return float(array.mean()), float("nan")
    return float(array.mean()), float(stats.t.ppf(0.975, len(array) - 1) * array.std(ddof=1) / np.sqrt(len(array)))


def draw_scores(
    corpus: Corpus, start: Aligner, old: list[int], domain: list[int], draw: int, seed: int, pool_too: bool = True
) -> dict[str, dict[int, float]]:
    order = [domain[k] for k in np.random.default_rng(seed + draw).permutation(len(domain))]
    test, pool = order[-3:], order[:-3]
    scores: dict[str, dict[int, float]] = {"adapt": {}, "pool": {}}
    for k in KS:
        labelled = pool[:k]
        if k == 0:
            f1 = score_learned(start, corpus, test).group_task1.f1
            scores["adapt"][0] = scores["pool"][0] = f1
            continue
        assert corpus.lexical is not None
        adapted, report = adapt_aligner(
            start, [corpus.pairs[i] for i in labelled], seed=seed + draw, features=[corpus.lexical[i] for i in labelled]
        )
        scores["adapt"][k] = score_learned(adapted, corpus, test).group_task1.f1
        if pool_too:
            pooled = train_learned(corpus, old + labelled, embedding=False, seed=seed + draw)
            scores["pool"][k] = score_learned(pooled, corpus, test).group_task1.f1
        else:
            scores["pool"][k] = float("nan")
        print(f"  draw {draw} k={k}: adapt {scores['adapt'][k]:.3f} (kept {report.kept}: {report.chosen or 'start'}), pool {scores['pool'][k]:.3f}, "
              f"k=0 {scores['adapt'][0]:.3f}", flush=True)  # fmt: skip
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domains", default="fiction,health")
    parser.add_argument("--plot", type=Path, default=None, help="write an SVG of group F1 against k")
    parser.add_argument("--no-pool", action="store_true", help="leave out the old loop (retrain on old + new pairs): half the time")
    args = parser.parse_args()
    corpus = load_corpus(embeddings=False)
    old = [k for k, d in enumerate(corpus.domains) if d in ("language learner", "bible")]
    start = train_learned(corpus, old, embedding=False, seed=args.seed)
    curves = {}
    for name in args.domains.split(","):
        domain = corpus.indices(name)
        if len(domain) < 4:
            raise SystemExit(f"domain {name!r} has {len(domain)} pairs; the loop needs at least 4")
        print(f"\n{name}: {len(domain)} pairs, {args.draws} draws, 3 test pairs each")
        draws = [draw_scores(corpus, start, old, domain, draw, args.seed, pool_too=not args.no_pool) for draw in range(args.draws)]
        print(f"{'k':>3}  {'adapt: F1 (95% CI)':>22}  {'adapt - k0':>18}  {'pool: F1 (95% CI)':>22}  {'pool - k0':>18}")
        for k in KS:
            cells = []
            for method in ("adapt", "pool"):
                mean, half = interval([d[method][k] for d in draws])
                diff, diff_half = interval([d[method][k] - d[method][0] for d in draws])
                cells.append(f"{mean:>10.3f} +- {half:.3f}  {diff:>+9.3f} +- {diff_half:.3f}")
            print(f"{k:>3}  " + "  ".join(cells))
        curves[name] = {method: [interval([d[method][k] for d in draws]) for k in KS] for method in ("adapt", "pool")}
    if args.plot is not None:
        from bench._svg import LineChart, Series, write_line_chart

        series = [
            Series(f"{name}, {method}", list(KS), [m for m, _ in points], [m - h for m, h in points], [m + h for m, h in points])
            for name, methods in curves.items()
            for method, points in methods.items()
        ]
        write_line_chart(LineChart("Group F1 on the rest of a new domain after labelling k of its pairs",
                                   "labelled pairs of the new domain (k)", "group F1 (95% CI over draws)", series), args.plot)  # fmt: skip
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
