"""Suggestions that learn while the annotator labels, measured on DEplain-web with each domain held out.

    .venv/bin/python bench/deplain_interactive.py [--seed 0] [--domains fiction,health,bible,"language learner"] [--no-refit]

Needs ../shared/data/deplain-web-dev. For each domain the model is the shipped recipe (learned
scorer + CRF, lexical features) trained on the *other three* domains, so no figure is on
documents the model saw. Two measurements per pair of the held-out domain:

1. **Revealed share.** The gold links of the first 0 / 10 / 25 / 50 % of the simple sentences
   (document order, as an annotator works) are given to the aligner (clamped decoding, as
   ``align --fixed``), and the rest is decoded given them, with and without the per-pair refit.
   Scored on the *unrevealed* simple sentences only: every gold and predicted group keeps its
   unrevealed simple sentences and its complex sentences (a group that touches revealed and
   unrevealed sentences is scored on its unrevealed part; one with only revealed ones is left
   out), then group F1 and sentence-pair F1 (Task 1) as everywhere else.
2. **Corrections per 100 simple sentences.** A simulated annotator labels each pair in document
   order: at each simple sentence it looks at the current suggestion (the complex sentences of
   its Viterbi state; none for null), accepts it when it equals the gold links and corrects it
   otherwise (one correction), and the sentence is then known. *static*: the suggestions of the
   first decoding throughout (the screen before it refreshed); *refresh*: decoded again after every label with
   the known sentences clamped; *refresh + refit*: also refitting the per-pair correction. For each refreshing
   mode also how often the suggestion the annotator reached was wrong in the first decoding and right after the
   refresh (fixed), and right before and wrong after (broke), per 100 simple sentences.

Printed per domain: mean over the domain's pairs with a 95 % t-interval, and the pooled (micro)
figure; for corrections also the change against *static*.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench._deplain import DOMAINS, Corpus, learned_logits, load_corpus, train_learned
from bench.deplain_learning_loop import interval
from models_ml.aligning.aligner import Aligner
from models_ml.data.evaluate import EvaluationReport, evaluate_pairs
from models_ml.data.io import AlignmentGroup, GoldPair

SHARES = (0.0, 0.10, 0.25, 0.50)


def gold_links(pair: GoldPair) -> list[tuple[int, ...]]:
    """Each simple sentence's gold complex sentences (the union over its gold groups; empty: unaligned)."""
    links: list[set[int]] = [set() for _ in pair.simple_sentences]
    for group in pair.groups:
        for simple in group.simple:
            links[simple].update(group.complex)
    return [tuple(sorted(linked)) for linked in links]


def unrevealed_part(groups: list[AlignmentGroup], hidden: set[int]) -> list[AlignmentGroup]:
    """Each group cut to its unrevealed simple sentences (complex side kept); groups with none are left out."""
    kept = []
    for group in groups:
        simple = tuple(j for j in group.simple if j in hidden)
        if simple:
            kept.append(AlignmentGroup(complex=group.complex, simple=simple, label=group.label, identical=group.identical))
    return kept


def revealed_scores(aligner: Aligner, pair: GoldPair, logits: np.ndarray, share: float, refit: bool) -> EvaluationReport:
    m, n = len(pair.simple_sentences), len(pair.complex_sentences)
    revealed = int(np.ceil(share * m))
    links = gold_links(pair)
    fixed = {j: links[j] for j in range(revealed)}
    result = aligner.align(
        pair.complex_sentences, pair.simple_sentences, similarity=logits, fixed=fixed or None, refit=refit and bool(fixed)
    )
    hidden = set(range(revealed, m))
    return evaluate_pairs(unrevealed_part(pair.groups, hidden), unrevealed_part(result.groups, hidden), m, n)


def corrections(aligner: Aligner, pair: GoldPair, logits: np.ndarray, mode: str) -> tuple[float, int, int]:
    """Corrections per 100 simple sentences of a simulated annotator (see the module docstring), and how many of the
    pair's suggestions the refresh changed from wrong to right (fixed) and from right to wrong (broke) against the
    first decoding's, as the annotator reached them."""
    links = gold_links(pair)
    first = current = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=logits).chosen_complex
    fixed: dict[int, tuple[int, ...]] = {}
    count = repaired = broke = 0
    for j, gold in enumerate(links):
        if mode != "static" and fixed:
            current = aligner.align(
                pair.complex_sentences, pair.simple_sentences, similarity=logits, fixed=fixed, refit=mode == "refresh + refit"
            ).chosen_complex
        right_first, right_now = set(first[j]) == set(gold), set(current[j]) == set(gold)
        count += not right_now
        repaired += right_now and not right_first
        broke += right_first and not right_now
        fixed[j] = gold
    return 100.0 * count / len(links), repaired, broke


def domain_model(corpus: Corpus, domain: str, seed: int) -> Aligner:
    train = [k for k, d in enumerate(corpus.domains) if d != domain]
    return train_learned(corpus, train, embedding=False, seed=seed)


def _line(name: str, values: list[float], pooled: float | None = None) -> str:
    mean, half = interval(values)
    text = f"  {name:<28} {mean:6.3f} ± {half:.3f}"
    return text + (f"   (pooled {pooled:.3f})" if pooled is not None else "")


def report_domain(corpus: Corpus, domain: str, seed: int, refit: bool) -> None:
    started = time.perf_counter()
    aligner = domain_model(corpus, domain, seed)
    indices = corpus.indices(domain)
    logits = learned_logits(aligner, corpus, indices)
    print(f"\n{domain} held out: {len(indices)} pairs, {sum(len(corpus.pairs[k].simple_sentences) for k in indices)} simple sentences")
    print("revealed share: group F1 / pair F1 on the unrevealed sentences (mean over pairs ± 95 %)")
    for share in SHARES:
        for use_refit in (False, True) if refit and share else (False,):
            reports = [revealed_scores(aligner, corpus.pairs[k], x, share, use_refit) for k, x in zip(indices, logits)]
            pooled = sum(reports[1:], reports[0])
            name = f"{share:.0%} revealed" + (" + refit" if use_refit else "")
            print(_line(name + ", group F1", [r.group_task1.f1 for r in reports], pooled.group_task1.f1))
            print(_line(name + ", pair F1", [r.sentence_task1.f1 for r in reports], pooled.sentence_task1.f1))
    print("corrections per 100 simple sentences (mean over pairs ± 95 %)")
    modes = ("static", "refresh", "refresh + refit") if refit else ("static", "refresh")
    outcomes = {mode: [corrections(aligner, corpus.pairs[k], x, mode) for k, x in zip(indices, logits)] for mode in modes}
    per_mode = {mode: [rate for rate, _, _ in rows] for mode, rows in outcomes.items()}
    simple = sum(len(corpus.pairs[k].simple_sentences) for k in indices)
    for mode in modes:
        change = "" if mode == "static" else f"   change {interval(list(np.subtract(per_mode[mode], per_mode['static'])))[0]:+.1f}"
        ratio = "" if mode == "static" else f" ({np.sum(per_mode[mode]) / max(np.sum(per_mode['static']), 1e-9) - 1:+.0%})"
        print(_line(mode, per_mode[mode]) + change + ratio)
        if mode != "static":
            repaired, broke = (sum(row[k] for row in outcomes[mode]) for k in (1, 2))
            print(f"    suggestions it fixed {100 * repaired / simple:.1f}, broke {100 * broke / simple:.1f} per 100 simple sentences")
    print(f"  ({time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument("--no-refit", action="store_true", help="leave out the per-pair refit (faster)")
    args = parser.parse_args()
    corpus = load_corpus(embeddings=False)
    for domain in args.domains.split(","):
        if domain not in DOMAINS:
            raise SystemExit(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
        report_domain(corpus, domain, args.seed, refit=not args.no_refit)


if __name__ == "__main__":
    main()
