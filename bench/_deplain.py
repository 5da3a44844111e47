"""Shared by the DEplain-web domain benches: the pairs with their domains, features computed once, training recipes.

Nothing here is a figure; the benches print those. The data is read from ../shared/data at run
time and never copied into the repository.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig, learned_config
from models_ml.aligning.crf import CRFConfig
from models_ml.aligning.train import TrainingConfig, evaluate_aligner, train_aligner
from models_ml.data.deplain import read_deplain, unplaced_summary
from models_ml.data.evaluate import EvaluationReport
from models_ml.data.io import GoldPair
from models_ml.similarity.pair_features import pair_features
from models_ml.similarity.pair_scorer import unit_cosine

REPO_ROOT = Path(__file__).resolve().parents[1]
DEPLAIN = REPO_ROOT.parent / "shared" / "data" / "deplain-web-dev"
DOMAINS = ("fiction", "health", "bible", "language learner")
SHIPPABLE_LICENCES = ("CC_BY_4", "CC_BY_SA_3")  # a model in the repository trains only on these (data README)


@dataclass
class Corpus:
    """The pairs, each pair's domain and licence, and per pair: lexical features, MiniLM cosines, both together."""

    pairs: list[GoldPair]
    domains: list[str]
    licences: list[str]
    cosine: list[np.ndarray] | None = None
    lexical: list[np.ndarray] | None = None
    with_embedding: list[np.ndarray] | None = None
    encoder_seconds: float = 0.0
    feature_seconds: float = 0.0

    def indices(self, domain: str) -> list[int]:
        return [k for k, d in enumerate(self.domains) if d == domain]


def load_corpus(*, embeddings: bool, device: str = "cpu") -> Corpus:
    """Read the pairs (reporting rows left out), then features, and MiniLM cosines when ``embeddings``."""
    if not DEPLAIN.is_dir():
        raise SystemExit(f"DEplain-web dev data not found at {DEPLAIN}; this bench needs it")
    pairs = read_deplain(DEPLAIN / "documents.csv", DEPLAIN / "alignments.csv")
    if (unplaced := unplaced_summary(pairs)) is not None:
        print(unplaced)
    with (DEPLAIN / "documents.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = {row["pair_id"]: row for row in csv.DictReader(handle)}
    corpus = Corpus(pairs, [rows[p.pair_id]["domain"] for p in pairs], [rows[p.pair_id]["license"] for p in pairs])
    if embeddings:
        from models_ml.similarity.encoders import load_sentence_encoder

        encoder = load_sentence_encoder(device=device)
        started = time.perf_counter()
        corpus.cosine = [unit_cosine(encoder.encode(p.simple_sentences), encoder.encode(p.complex_sentences)) for p in pairs]
        corpus.encoder_seconds = time.perf_counter() - started
    started = time.perf_counter()
    corpus.lexical = [pair_features(p.simple_sentences, p.complex_sentences) for p in pairs]
    corpus.feature_seconds = time.perf_counter() - started
    if corpus.cosine is not None:
        corpus.with_embedding = [pair_features(p.simple_sentences, p.complex_sentences, c) for p, c in zip(pairs, corpus.cosine)]
    return corpus


def dev_split(train: list[int], seed: int, fraction: float = 0.2) -> tuple[list[int], list[int]]:
    """(training, dev) indices: a seeded fifth of the training pairs is the early-stopping dev set."""
    order = [train[k] for k in np.random.default_rng(seed).permutation(len(train))]
    count = max(1, round(fraction * len(order))) if len(order) > 1 else 0
    return order[count:], order[:count]


def train_learned(corpus: Corpus, train: list[int], *, embedding: bool, seed: int, base: Aligner | None = None,
                  dev: list[int] | None = None, training: TrainingConfig | None = None) -> Aligner:  # fmt: skip
    """The learned scorer + CRF recipe the CLI's ``train`` uses: a fifth of ``train`` (or ``dev``) for early stopping."""
    features = corpus.with_embedding if embedding else corpus.lexical
    assert features is not None, "load the corpus with embeddings=True"
    if dev is None:
        train, dev = dev_split(train, seed)
    aligner = base if base is not None else Aligner(learned_config(device="cpu", scorer_embedding=embedding), seed=seed)
    train_aligner(
        [corpus.pairs[k] for k in train], aligner=aligner, training=training or TrainingConfig(), seed=seed,
        features=[features[k] for k in train], dev_pairs=[corpus.pairs[k] for k in dev],
        dev_features=[features[k] for k in dev],
    )  # fmt: skip
    return aligner


def learned_logits(aligner: Aligner, corpus: Corpus, indices: list[int]) -> list[np.ndarray]:
    features = corpus.with_embedding if aligner.uses_encoder else corpus.lexical
    assert features is not None
    return [aligner.measure.logits(features[k]) for k in indices]  # type: ignore[attr-defined]


def score_learned(aligner: Aligner, corpus: Corpus, indices: list[int]) -> EvaluationReport:
    return evaluate_aligner(aligner, [corpus.pairs[k] for k in indices], learned_logits(aligner, corpus, indices))


def train_measure_crf(corpus: Corpus, matrices: list[np.ndarray], train: list[int], *, measure: str, seed: int) -> Aligner:
    """The CLI's ``train`` for a plain measure (the previous best: char 3-gram, single-sentence states)."""
    train, dev = dev_split(train, seed)
    aligner = Aligner(AlignerConfig(measure=measure, device="cpu", crf=CRFConfig(max_span=1)), seed=seed)
    train_aligner(
        [corpus.pairs[k] for k in train], aligner=aligner, training=TrainingConfig(), seed=seed,
        similarities=[matrices[k] for k in train], dev_pairs=[corpus.pairs[k] for k in dev],
        dev_similarities=[matrices[k] for k in dev],
    )  # fmt: skip
    return aligner
