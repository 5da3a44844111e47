"""Keys per document pair and per gold link: what reaching the gold alignment costs an annotator, per domain held out.

    .venv/bin/python bench/annotator_keys.py [--domains fiction,health,bible,"language learner",demo] [--seed 0]

A simulated annotator who knows the gold alignment labels each pair on the annotation screen's focus view with the
keys the screen binds (``bench/_keys.py`` says how the screen is modelled and what each strategy does). Counted:
every key it presses, until the pair's labels are the gold ones and the pair is marked done.

Data and models, never a figure on data the model was trained on:

- DEplain-web dev (``../shared/data/deplain-web-dev``, when present), per domain: the shipped recipe (learned
  scorer + CRF, lexical features) trained on the *other three* domains, as ``bench/deplain_interactive.py``.
- ``demo``: the six English demo stories (``alignment/demo_corpus``, split as the import splits them) against their
  hand-written reference, aligned by the shipped default model, which was trained on German DEplain-web only. Its
  bulk accept falls back on the shipped model's held-out calibration while the project's answers are too few, as the
  app's does; the DEplain domains' models are trained in the run and have none.

Printed per domain and strategy: keys per pair (mean over pairs ± 95 % t-interval), keys per gold link and per simple
sentence (pooled), keys by kind, and for the ``paragraph`` strategy the share of ``A``'s labels that were wrong.
*sentence* (one decision per sentence) is today's screen as the guide teaches it: the baseline the other
strategies are compared with, in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._django import setup_django

DEMO = "demo"
KINDS = {
    "move": ("next-simple", "next-open"),
    "find": ("next-candidate", "prev-candidate", "jump", "jump-type", "jump-pick"),
    "label": (
        "accept",
        "label-aligned",
        "label-partial",
        "label-not_aligned",
        "accept-paragraph",
        "accept-bulk",
        "bulk-confirm",
        *(f"pick-{k}" for k in range(1, 6)),
    ),
    "done": ("finish", "finish-confirm"),
}


def demo_pairs():
    """The demo stories as gold pairs: sentences and paragraphs as the import splits them, the reference's groups."""
    from alignment.importing.parsing import SplitLimits, parse_file
    from alignment.importing.readers import ImportOptions
    from models_ml.data.io import GoldPair
    from webapp.demo import DEMO_CORPUS_DIR, demo_reference_groups

    options, limits = ImportOptions(format="text", language="en"), SplitLimits(budget_seconds=60, max_sentences=250_000)
    pairs = []
    for article, (complex_count, simple_count, groups) in sorted(demo_reference_groups().items()):
        sides = []
        for level in ("adv", "ele"):
            name = f"{article}-{level}.txt"
            parsed = parse_file(name, (DEMO_CORPUS_DIR / name).read_bytes(), options, limits)
            if parsed.error:
                raise SystemExit(parsed.error)
            _, layout = parsed.documents[0]
            sides.append([(s.text, k) for k, p in enumerate(layout.paragraphs) for s in p.sentences])
        (complex_side, simple_side) = sides
        if (len(complex_side), len(simple_side)) != (complex_count, simple_count):
            raise SystemExit(f"{article}: the import splits it into other sentences than ALIGNMENTS.md counts")
        pairs.append(GoldPair(article, [t for t, _ in complex_side], [t for t, _ in simple_side], groups,
                              [p for _, p in complex_side], [p for _, p in simple_side], domain=DEMO))  # fmt: skip
    return pairs


def model_calibration(directory) -> list | None:
    """The shipped model's held-out calibration (bulk accept's fallback while a project has too few answers)."""
    from models_ml.aligning.calibration import calibration_read

    found = calibration_read(Path(directory))
    return found[1] if found else None


def interval(values: list[float]) -> tuple[float, float]:
    from bench.deplain_learning_loop import interval as t_interval

    return t_interval(values)


def walk(aligner, pairs, similarities, strategy: str, target: float, calibration=None):
    """Each pair's tally, in order, as one annotator does them in one project: for ``bulk``, the threshold for
    ``target`` comes from the answered suggestions of the pairs done before, as the server chooses it (the model's
    held-out ``calibration``, when it has one, while they are too few)."""
    from annotation.labelling.bulk_estimate import offer_threshold
    from bench._keys import annotate_pair

    tallies, answers, started = [], [], None
    for k, (pair, similarity) in enumerate(zip(pairs, similarities)):
        threshold = offer_threshold(answers, target, calibration) if strategy.startswith("bulk") else None
        if threshold is not None and started is None:
            started = (k, threshold)
        tallies.append(annotate_pair(aligner, pair, similarity, strategy, threshold))
        answers += tallies[-1].answers
    if strategy.startswith("bulk"):
        print(f"             bulk accept from pair {started[0] + 1} on, first at t = {started[1].threshold:.2f} "
              f"(estimate {started[1].precision:.3f} on {started[1].count}, basis {started[1].basis})"
              if started else "             bulk accept never offered")  # fmt: skip
    return tallies


def report(domain: str, aligner, pairs, similarities, strategies, target: float, calibration=None) -> None:
    from bench._keys import key_name

    started = time.perf_counter()
    print(f"\n{domain} held out: {len(pairs)} pairs, {sum(len(p.simple_sentences) for p in pairs)} simple sentences, "
          f"{sum(len(g.complex) * len(g.simple) for p in pairs for g in p.groups)} gold links")  # fmt: skip
    baseline = None
    for strategy in strategies:
        per_pair = walk(aligner, pairs, similarities, strategy, target, calibration)
        total = sum(per_pair[1:], per_pair[0])
        mean, half = interval([t.total for t in per_pair])
        change = "" if baseline is None else f"   {total.total / baseline - 1:+.0%} against {strategies[0]}"
        baseline = baseline or total.total
        print(f"  {strategy:<10} keys per pair {mean:6.1f} ± {half:4.1f}   per gold link {total.total / max(total.links, 1):.2f}"
              f"   per simple sentence {total.total / total.simple:.2f}{change}")  # fmt: skip
        kinds = {kind: sum(total.keys[a] for a in actions) for kind, actions in KINDS.items()}
        print("             by kind: " + ", ".join(f"{kind} {count / total.pairs:.1f}" for kind, count in kinds.items()) + " per pair")
        common = ", ".join(f"{key_name(action)} {count}" for action, count in total.keys.most_common())
        print(f"             keys: {common}")
        if total.bulk:
            print(
                f"             {'B' if strategy.startswith('bulk') else 'A'} accepted {total.bulk} labels, {total.bulk_wrong} wrong "
                f"({100 * total.bulk_wrong / total.bulk:.1f} per 100); gold links missed on sentences not looked at: {total.missed}"
            )
    print(f"  ({time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", default="fiction,health,bible,language learner,demo")
    parser.add_argument("--strategies", default="sentence,paragraph,bulk,picker,bulk+picker")
    parser.add_argument("--target", type=float, default=0.97, help="the project's precision target for bulk accept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    setup_django()  # the screen's candidate lists come from the app's refresh code (no table is read)
    from django.conf import settings

    from bench._deplain import DEPLAIN, DOMAINS, learned_logits, load_corpus
    from bench._keys import STRATEGIES
    from bench.deplain_interactive import domain_model
    from models_ml.aligning.aligner import Aligner

    strategies = args.strategies.split(",")
    domains = args.domains.split(",")
    for name in strategies:
        if name not in STRATEGIES:
            raise SystemExit(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
    for domain in domains:
        if domain not in (*DOMAINS, DEMO):
            raise SystemExit(f"unknown domain {domain!r}; choose from {', '.join((*DOMAINS, DEMO))}")
    corpus = None
    for domain in domains:
        if domain == DEMO:
            pairs = demo_pairs()
            shipped = Aligner.load(settings.ALIGNER_MODEL_DIR, device="cpu")
            report(domain, shipped, pairs, [None] * len(pairs), strategies, args.target, model_calibration(settings.ALIGNER_MODEL_DIR))
            continue
        if not DEPLAIN.is_dir():
            print(f"\n{domain}: skipped, DEplain-web dev is not at {DEPLAIN}")
            continue
        corpus = corpus or load_corpus(embeddings=False)
        aligner = domain_model(corpus, domain, args.seed)
        indices = corpus.indices(domain)
        report(domain, aligner, [corpus.pairs[k] for k in indices], learned_logits(aligner, corpus, indices), strategies, args.target)


if __name__ == "__main__":
    main()
