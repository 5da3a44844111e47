"""Where the default aligner goes wrong in a held-out domain, counted per simple sentence (DEplain-web dev).

    .venv/bin/python bench/deplain_errors.py [--domains fiction,health] [--seed 0]

Needs ../shared/data/deplain-web-dev. For each domain: the shipped recipe (learned scorer, lexical
features, CRF) is trained on the other three domains (leave one domain out, as in
bench/deplain_domains.py) and decodes the held-out domain's pairs. Every simple sentence is then put in
one bin: it has a gold partner and gets a complex sentence of its gold group (right), a complex sentence
outside it (wrong) or none (missed); or it has no gold partner and gets one (spurious) or none. It also
prints each pair's share of simple sentences with a gold partner, the gold coverage that bounds recall.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._deplain import DOMAINS, learned_logits, load_corpus, train_learned


def sentence_bins(gold_groups, predicted_groups, simple_count: int) -> Counter:
    gold: dict[int, set[int]] = {}
    for group in gold_groups:
        for s in group.simple:
            gold.setdefault(s, set()).update(group.complex)
    predicted: dict[int, set[int]] = {}
    for group in predicted_groups:
        for s in group.simple:
            predicted.setdefault(s, set()).update(group.complex)
    bins: Counter = Counter()
    for s in range(simple_count):
        partners, found = gold.get(s), predicted.get(s)
        if partners:
            bins["right" if found and found & partners else "wrong" if found else "missed"] += 1
        else:
            bins["spurious" if found else "neither"] += 1
    return bins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", default="fiction,health")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    domains = args.domains.split(",")
    if unknown := set(domains) - set(DOMAINS):
        parser.error(f"unknown domain(s) {sorted(unknown)}; domains: {', '.join(DOMAINS)}")
    corpus = load_corpus(embeddings=False)
    for domain in domains:
        test = corpus.indices(domain)
        train = [k for k in range(len(corpus.pairs)) if k not in test]
        aligner = train_learned(corpus, train, embedding=False, seed=args.seed)
        bins: Counter = Counter()
        predicted_pairs = 0
        print(f"\n{domain} held out ({len(test)} pairs; trained on {len(train)} of the other domains)")
        for k, logits in zip(test, learned_logits(aligner, corpus, test)):
            pair = corpus.pairs[k]
            groups = aligner.align(pair.complex_sentences, pair.simple_sentences, similarity=logits).groups
            predicted_pairs += sum(len(g.simple) * len(g.complex) for g in groups)
            bins += sentence_bins(pair.groups, groups, len(pair.simple_sentences))
            covered = len({s for g in pair.groups for s in g.simple}) / len(pair.simple_sentences)
            print(f"  pair {pair.pair_id}: {len(pair.simple_sentences)} simple sentences, {covered:.0%} with a gold partner")
        partnered = bins["right"] + bins["wrong"] + bins["missed"]
        print(
            f"  simple sentences with a gold partner: {partnered}; right {bins['right']} ({bins['right'] / partnered:.0%}), "
            f"wrong {bins['wrong']} ({bins['wrong'] / partnered:.0%}), missed {bins['missed']} ({bins['missed'] / partnered:.0%})"
        )
        print(f"  without a gold partner: spurious {bins['spurious']}, left alone {bins['neither']}; predicted pairs {predicted_pairs}")


if __name__ == "__main__":
    main()
