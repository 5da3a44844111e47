"""Write the shipped model's held-out calibration (models_ml/default_model/calibration.json) for bulk accept's fallback.

    .venv/bin/python bench/calibrate_default_model.py [--folds 5] [--seed 0] [--output models_ml/default_model]

Needs ../shared/data/deplain-web-dev. The shipped model trained on every pair whose licence allows shipping (bible,
language learner), so its own suggestions on those pairs are no evidence. Instead the same recipe
(``bench/train_default_model.py --lexical-only``) is trained ``--folds`` times, each time without one fold of those
pairs (document-level, seeded), and each fold's suggestions are scored against its gold: how often a suggestion at
each confidence was right, on documents its model never saw (:mod:`models_ml.aligning.calibration`). Fiction and health
are left out: the shipped model is not meant for them (its card), and a project there gets its threshold from its
own labels. The weights are not touched; the file is added to the model's checksums.json, which changes the model's
version string (its checksum).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from annotation.labelling.bulk_estimate import GRID, estimate_at, threshold_for
from bench._deplain import SHIPPABLE_LICENCES, learned_logits, load_corpus, train_learned
from models_ml.aligning.calibration import calibration_write, held_out_answers
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    corpus = load_corpus(embeddings=False)
    shippable = [k for k, licence in enumerate(corpus.licences) if licence in SHIPPABLE_LICENCES]
    order = [shippable[k] for k in np.random.default_rng(args.seed).permutation(len(shippable))]
    answers: list[tuple[float, bool]] = []
    for fold in range(args.folds):
        held = order[fold :: args.folds]
        aligner = train_learned(corpus, [k for k in shippable if k not in held], embedding=False, seed=args.seed)
        found = held_out_answers(aligner, [corpus.pairs[k] for k in held], learned_logits(aligner, corpus, held))
        print(f"fold {fold + 1}: {len(held)} pairs held out, {len(found)} suggestions, {sum(r for _, r in found)} right")
        answers += found
    domains = sorted({corpus.domains[k] for k in shippable})
    basis = (
        f"document-level {args.folds}-fold cross-validation of the shipped recipe on its training pairs "
        f"(DEplain-web dev: {', '.join(domains)}, {len(shippable)} pairs, seed {args.seed}): each suggestion scored by a model "
        "that never saw its document"
    )
    calibration_write(args.output, answers, basis)
    print(f"{len(answers)} suggestions, {sum(r for _, r in answers)} right; written to {args.output}/calibration.json")
    for target in (0.9, 0.95, 0.97, 0.99):
        chosen = threshold_for(answers, target, basis="model")
        print(
            f"  target {target}: "
            + (f"threshold {chosen.threshold:.2f}, estimate {chosen.precision:.3f} on {chosen.count}" if chosen else "none")
        )
    print("  share right at or above: " + ", ".join(f"{t:.2f} {estimate_at(answers, t).precision:.3f}" for t in GRID[::10]))


if __name__ == "__main__":
    main()
