"""Train the model shipped in models_ml/default_model, and score it on the domains it never saw.

    .venv/bin/python bench/train_default_model.py [--lexical-only] [--seed 0] [--output models_ml/default_model]

Needs ../shared/data/deplain-web-dev. The model trains only on the pairs whose licence allows
shipping (CC BY 4.0 language learner, CC BY-SA 3.0 bible: see ../shared/data/README.md), with
the CLI's recipe (learned pair scorer + single-sentence CRF, a fifth of the pairs for early
stopping). It is then scored on the fiction and health pairs, which it never trained on; the
card beside the weights (MODEL_CARD.md) records what it was trained on and these figures. The
figures for its own domains come from bench/deplain_domains.py (document-level CV), never from
the pairs it trained on.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._deplain import SHIPPABLE_LICENCES, load_corpus, score_learned, train_learned
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR, write_checksums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical-only", action="store_true", help="no MiniLM cosines among the features")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    embedding = not args.lexical_only
    corpus = load_corpus(embeddings=embedding)
    train = [k for k, licence in enumerate(corpus.licences) if licence in SHIPPABLE_LICENCES]
    unseen = [k for k, licence in enumerate(corpus.licences) if licence not in SHIPPABLE_LICENCES]
    aligner = train_learned(corpus, train, embedding=embedding, seed=args.seed)
    aligner.config = replace(aligner.config, device="")  # the shipped model picks CUDA when there is one
    aligner.save(args.output)
    lines = []
    for domain in sorted({corpus.domains[k] for k in unseen}):
        indices = [k for k in unseen if corpus.domains[k] == domain]
        g = score_learned(aligner, corpus, indices).group_task1
        lines.append(f"| {domain} | {len(indices)} | {g.precision:.3f} | {g.recall:.3f} | {g.f1:.3f} |")
    trained_on = ", ".join(
        f"{domain} {sum(1 for k in train if corpus.domains[k] == domain)} pairs ({licence.replace('_', ' ')})"
        for domain, licence in sorted({(corpus.domains[k], corpus.licences[k]) for k in train})
    )
    print(f"trained on {trained_on}\nscored on domains it never saw:")
    print("\n".join(lines))
    card = args.output / "MODEL_CARD.md"
    card.write_text(CARD.format(trained_on=trained_on, features="lexical + MiniLM cosines" if embedding else "lexical only",
                                unseen="\n".join(lines), flags=("--lexical-only " if args.lexical_only else "") + f"--seed {args.seed}"), encoding="utf-8")  # fmt: skip
    write_checksums(args.output, ("config.json", "crf.pt", "MODEL_CARD.md"))
    print(f"saved to {args.output}")


CARD = """# Default aligner: learned pair scorer + CRF

The model the app and `python -m models_ml align` use when no model is configured
(`ALIGNER_MODEL_DIR=untrained` or `align --untrained` give the old hand-calibrated MiniLM aligner).

- **What it is:** a logistic regression over the features of every (simple, complex) sentence pair
  (`models_ml/similarity/pair_features.py`: character 3-gram cosine, how much of each sentence the other covers in
  character 3-grams and in content words, length ratio, relative position, their margins over the
  sentence's row and column and the neighbouring sentence's score; features: {features}), whose log-odds
  are the emissions of the neural CRF (single complex sentence per simple sentence; splits come from
  neighbouring simple sentences choosing the same complex one). Files: `config.json` (settings and the
  scorer's weights), `crf.pt` (the CRF), `checksums.json`.
- **Trained on** DEplain-web dev (Stodden, Momen & Kallmeyer, ACL 2023), only the pairs whose licence
  allows it: {trained_on}. DEplain-web's language-learner texts are CC BY 4.0 and its bible texts CC BY-SA
  3.0; this model is a work derived from them and is credited to their authors as DEplain-web records them.
- **Recipe:** `bench/train_default_model.py {flags}` (the CLI's `train`: a fifth of the pairs for
  early stopping on group F1).
- **On domains it never saw** (DEplain's group scoring: a group counts only when both its sentence sets
  match; identical pairs included):

| domain | pairs | group P | group R | group F1 |
|---|---|---|---|---|
{unseen}

  Figures for its own domains, by document-level cross-validation and by leaving each domain out, are in
  the README ("Alignment quality per domain"), from `bench/deplain_domains.py`.
- **Limits:** German simplification (Easy/Plain German) of news-like, bible and web texts; fiction and
  health rewrites (chapters retold in Easy German, most groups long splits) are far harder for every
  aligner measured. Label a few pairs of a new domain and retrain from this model (the Models page, or
  `python -m models_ml train --base models_ml/default_model`).
"""


if __name__ == "__main__":
    main()
