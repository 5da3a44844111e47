"""Training the aligner's neural CRF on gold document pairs (Jiang et al. 2020, section 2.3).

Why here and not in ``crf.py``: the CRF only knows similarity matrices and state sequences.
This module turns gold document pairs into exactly what the CRF sees at inference time:

1. the measure's (m, n) similarity matrix of each pair (computed once, or passed in);
2. the aligner's paragraph alignment and blocks (:meth:`Aligner.blocks`, the code path
   :meth:`Aligner.align` uses), so the CRF is trained on the masked blocks it later decodes;
3. per block, ``emission_scale * block`` and the gold states of its simple sentences
   (:func:`models_ml.aligning.crf.groups_to_states` over the gold sentence pairs inside the block,
   in block-local indices).

Then :func:`models_ml.aligning.crf.train_crf` maximises the log-likelihood. Training starts from the
aligner's untrained calibration (null threshold, merge bonus, zero transitions), so a few
epochs refine a sensible model rather than start from noise.

What cannot be learned is counted, not hidden: gold pairs outside every block (lost to
paragraph alignment: the recall ceiling), gold pairs no state can represent (a simple
sentence aligned to complex sentences further apart than ``max_span``), and blocks skipped
because they have more states than ``dense_state_limit`` (the forward algorithm is dense).

Optionally the "partial" label threshold is tuned afterwards on the *training* pairs: the
value on a fixed grid that maximises Task-2 sentence-pair F1 there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import LEARNED
from models_ml.aligning.crf import groups_to_states, train_crf
from models_ml.aligning.scorer_training import fit_scorer, scorer_features
from models_ml.aligning.train_config import TrainingConfig
from models_ml.data.evaluate import EvaluationReport, evaluate_pairs, pair_labels_from_groups
from models_ml.data.io import AlignmentGroup, GoldPair

__all__ = ["EpochReport", "TrainingConfig", "TrainingReport", "evaluate_aligner", "train_aligner"]

PARTIAL_THRESHOLD_GRID = tuple(round(0.05 * k, 2) for k in range(21))  # 0.0, 0.05, ..., 1.0

Progress = Callable[[str], None]


@dataclass
class TrainingReport:
    """What one training run saw and did.

    log_likelihoods: mean log-likelihood per block in each epoch (during the epoch, from train_crf).
    initial_log_likelihood / final_log_likelihood: mean over the blocks before and after training.
    pairs: gold document pairs given; pairs_used: those with at least one trained block.
    blocks: blocks trained on; skipped_blocks: one reason per block or pair left out.
    gold_pairs: gold (simple, complex) sentence pairs of the given documents;
    gold_pairs_outside_blocks: those lost to paragraph alignment (or in a skipped block);
    gold_pairs_beyond_span: those inside blocks that no CRF state covers (too far apart).
    partial_threshold: the aligner's threshold after training (tuned or kept).
    seconds: wall time of the whole run, scoring included.
    """

    log_likelihoods: list[float]
    initial_log_likelihood: float
    final_log_likelihood: float
    pairs: int
    pairs_used: int
    blocks: int
    skipped_blocks: list[str] = field(default_factory=list)
    gold_pairs: int = 0
    gold_pairs_outside_blocks: int = 0
    gold_pairs_beyond_span: int = 0
    partial_threshold: float = 0.5
    seconds: float = 0.0
    dev_f1: list[float] = field(default_factory=list)
    best_epoch: int | None = None
    stopped_early: bool = False

    def summary(self) -> str:
        """A few lines for the CLI and logs."""
        reachable = self.gold_pairs - self.gold_pairs_outside_blocks - self.gold_pairs_beyond_span
        lines = (
            f"pairs: {self.pairs_used} of {self.pairs} used; blocks: {self.blocks} trained, {len(self.skipped_blocks)} skipped",
            f"gold sentence pairs: {self.gold_pairs}; outside blocks: {self.gold_pairs_outside_blocks}; "
            + f"beyond max_span: {self.gold_pairs_beyond_span}; learnable: {reachable}",
            f"log-likelihood per block: {self.initial_log_likelihood:.3f} -> {self.final_log_likelihood:.3f} "
            + f"after {len(self.log_likelihoods)} epochs",
            f"partial_threshold: {self.partial_threshold:.2f}; time: {self.seconds:.1f} s",
        )
        if self.dev_f1:
            lines += (
                f"dev group F1 per epoch (epoch 0 = before training): {[round(f, 3) for f in self.dev_f1]}; "
                + f"kept epoch {self.best_epoch}"
                + ("; stopped early" if self.stopped_early else ""),
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class EpochReport:
    """Passed to ``on_epoch`` after every epoch: what a progress bar or a job row shows."""

    epoch: int  # 0: the weights training starts from, scored on dev before the first epoch
    epochs: int
    log_likelihood: float | None  # None for epoch 0 (no training step yet)
    dev: EvaluationReport | None
    best_epoch: int | None


@dataclass
class _Example:
    """One training block: scaled similarities (r, c) and gold states (r,)."""

    sim: torch.Tensor
    gold_states: list[int]


def train_aligner(
    pairs: Sequence[GoldPair],
    *,
    aligner: Aligner,
    training: TrainingConfig,
    seed: int,
    progress: Progress | None = None,
    similarities: Sequence[np.ndarray] | None = None,
    dev_pairs: Sequence[GoldPair] = (),
    dev_similarities: Sequence[np.ndarray] | None = None,
    on_epoch: Callable[[EpochReport], None] | None = None,
    features: Sequence[np.ndarray] | None = None,
    dev_features: Sequence[np.ndarray] | None = None,
) -> TrainingReport:
    """Train ``aligner``'s CRF in place on gold document pairs and return what happened.

    similarities: optional precomputed (m, n) matrix per pair (row = simple sentence), as the
    measure would give; lets a benchmark score each pair once and reuse it across folds.
    seed: shuffles the block order of every epoch (the CRF's initial parameters come from the
    aligner's own seed). Raises ValueError when no block can be trained on.
    dev_pairs: held-out pairs for early stopping: after every epoch the aligner decodes them,
    and training stops after ``training.patience`` epochs without a better group-level Task-1
    F1; the best epoch's weights are restored (epoch 0, the weights given, can win).
    on_epoch: called after every epoch with an :class:`EpochReport`; it may raise to cancel.
    features / dev_features: with ``measure="learned"``, optional precomputed pair features
    (:func:`models_ml.aligning.scorer_training.scorer_features`); the scorer is fitted (or fine-tuned) on
    the training pairs first and its log-odds are the matrices the CRF trains on.

    Longer than 60 lines only by its keyword arguments and their description; the body is the
    training steps in order (scorer, examples, CRF epochs with early stopping, threshold).
    """
    start = time.perf_counter()
    say = progress or (lambda message: None)
    if similarities is not None and len(similarities) != len(pairs):
        raise ValueError(f"got {len(similarities)} similarity matrices for {len(pairs)} gold pairs")
    if aligner.config.measure == LEARNED:
        say("fitting the pair scorer")
        similarities = fit_scorer(
            aligner, pairs, features if features is not None else scorer_features(aligner, pairs),
            l2=training.scorer_l2, prior_l2=training.scorer_prior_l2,
        )  # fmt: skip
        if dev_pairs:
            dev_similarities = [aligner.measure.logits(f) for f in (dev_features or scorer_features(aligner, dev_pairs))]  # type: ignore[attr-defined]
    matrices = _similarities(pairs, aligner, similarities, say)
    examples, report = _training_examples(pairs, matrices, aligner)
    say(f"training on {len(examples)} blocks of {report.pairs_used} pairs for {training.epochs} epochs")
    report.initial_log_likelihood = _mean_log_likelihood(aligner, examples)
    dev_matrices = _similarities(dev_pairs, aligner, dev_similarities, say) if dev_pairs else []
    stopper = _EarlyStopping(aligner, dev_pairs, dev_matrices, training, report, on_epoch)
    report.log_likelihoods = train_crf(
        aligner.crf,
        [(example.sim, example.gold_states) for example in examples],
        epochs=training.epochs,
        lr=training.lr,
        seed=seed,
        device=aligner.device,
        on_epoch=stopper,
    )
    stopper.restore_best()
    report.final_log_likelihood = _mean_log_likelihood(aligner, examples)
    if training.tune_partial_threshold:
        say("tuning partial_threshold on the training pairs")
        aligner.config = replace(aligner.config, partial_threshold=_tuned_partial_threshold(aligner, pairs, matrices))
    report.partial_threshold = aligner.config.partial_threshold
    report.seconds = time.perf_counter() - start
    return report


class _EarlyStopping:
    """The ``on_epoch`` hook of :func:`train_crf`: dev evaluation, best weights, patience, reporting."""

    def __init__(
        self,
        aligner: Aligner,
        dev_pairs: Sequence[GoldPair],
        dev_matrices: Sequence[np.ndarray],
        training: TrainingConfig,
        report: TrainingReport,
        on_epoch: Callable[[EpochReport], None] | None,
    ) -> None:
        self.aligner, self.dev_pairs, self.dev_matrices = aligner, dev_pairs, dev_matrices
        self.training, self.report, self.on_epoch = training, report, on_epoch
        self.best_state: dict[str, torch.Tensor] | None = None
        self.best: tuple[float, float] = (-1.0, float("-inf"))
        self.since_best = 0
        scratch = TrainingReport([], 0.0, 0.0, pairs=len(dev_pairs), pairs_used=0, blocks=0)
        self.dev_examples = [e for pair, sim in zip(dev_pairs, dev_matrices) for e in _pair_examples(pair, sim, aligner, scratch)]
        if dev_pairs:  # the starting weights compete too: "kept epoch 0" means no epoch of training beat them
            dev = self._score(0)
            if on_epoch is not None:
                on_epoch(EpochReport(0, training.epochs, None, dev, report.best_epoch))

    def _score(self, epoch: int) -> EvaluationReport:
        """Dev group F1, ties broken by the dev log-likelihood (tiny dev sets tie often)."""
        dev = evaluate_aligner(self.aligner, self.dev_pairs, self.dev_matrices)
        f1 = dev.group_task1.f1
        self.report.dev_f1.append(f1)
        likelihood = _mean_log_likelihood(self.aligner, self.dev_examples) if self.dev_examples else 0.0
        if (f1, likelihood) > self.best:
            self.best, self.since_best, self.report.best_epoch = (f1, likelihood), 0, epoch
            self.best_state = {name: value.detach().clone() for name, value in self.aligner.crf.state_dict().items()}
        else:
            self.since_best += 1
        return dev

    def __call__(self, epoch: int, log_likelihood: float) -> bool:
        dev = self._score(epoch) if self.dev_pairs else None
        if self.on_epoch is not None:
            self.on_epoch(EpochReport(epoch, self.training.epochs, log_likelihood, dev, self.report.best_epoch))
        stop = dev is not None and self.since_best >= self.training.patience
        self.report.stopped_early = stop and epoch < self.training.epochs
        return stop

    def restore_best(self) -> None:
        if self.best_state is not None:
            self.aligner.crf.load_state_dict(self.best_state)
            self.aligner.crf.eval()


def evaluate_aligner(aligner: Aligner, pairs: Sequence[GoldPair], similarities: Sequence[np.ndarray] | None = None) -> EvaluationReport:
    """Decode every pair with ``aligner`` and sum Task 1 / Task 2 against its gold (micro-average)."""
    if not pairs:
        raise ValueError("evaluate_aligner needs at least one gold document pair")
    matrices = _similarities(pairs, aligner, similarities, lambda message: None)
    total: EvaluationReport | None = None
    for pair, similarity in zip(pairs, matrices):
        m, n = similarity.shape
        if m and n:
            result = aligner.align(
                pair.complex_sentences, pair.simple_sentences, pair.complex_paragraphs, pair.simple_paragraphs,
                similarity=similarity,
            )  # fmt: skip
            predicted = result.groups
        else:
            predicted = []
        report = evaluate_pairs(pair.groups, predicted, m, n)
        total = report if total is None else total + report
    assert total is not None
    return total


def _similarities(pairs: Sequence[GoldPair], aligner: Aligner, given: Sequence[np.ndarray] | None, say: Progress) -> list[np.ndarray]:
    """One float32 (m, n) matrix per pair: the given ones (shape-checked) or the measure's scores."""
    matrices = []
    for index, pair in enumerate(pairs):
        m, n = len(pair.simple_sentences), len(pair.complex_sentences)
        if given is not None:
            matrix = np.asarray(given[index], dtype=np.float32)  # (m, n)
        elif m and n:
            matrix = aligner.measure.score(pair.simple_sentences, pair.complex_sentences)  # (m, n)
        else:
            matrix = np.zeros((m, n), dtype=np.float32)
        if matrix.shape != (m, n):
            raise ValueError(f"pair {pair.pair_id}: similarity has shape {matrix.shape}, expected {(m, n)}")
        matrices.append(matrix)
        if given is None and (index + 1) % 50 == 0:
            say(f"scored {index + 1} of {len(pairs)} pairs")
    return matrices


def _training_examples(
    pairs: Sequence[GoldPair], matrices: Sequence[np.ndarray], aligner: Aligner
) -> tuple[list[_Example], TrainingReport]:
    """Every trainable block of every pair, and a report counting them; ValueError when there is none."""
    examples: list[_Example] = []
    report = TrainingReport([], 0.0, 0.0, pairs=len(pairs), pairs_used=0, blocks=0)
    for pair, similarity in zip(pairs, matrices):
        used_before = len(examples)
        examples.extend(_pair_examples(pair, similarity, aligner, report))
        report.pairs_used += len(examples) > used_before
    report.blocks = len(examples)
    if not examples:
        reasons = "; ".join(report.skipped_blocks[:3]) or "no gold pairs"
        raise ValueError(f"no trainable block among {len(pairs)} gold pairs ({reasons})")
    return examples, report


def _pair_examples(pair: GoldPair, similarity: np.ndarray, aligner: Aligner, report: TrainingReport) -> list[_Example]:
    """Training blocks of one pair, with its gold pairs' bookkeeping added to ``report``."""
    m, n = similarity.shape
    gold = set(pair_labels_from_groups(pair.groups, m, n))  # {(simple j, complex i)}
    report.gold_pairs += len(gold)
    if m == 0 or n == 0:
        report.skipped_blocks.append(f"pair {pair.pair_id}: an empty side")
        return []
    plan = aligner.blocks(similarity, pair.simple_paragraphs, pair.complex_paragraphs)
    covered: set[tuple[int, int]] = set()
    examples = []
    max_span = aligner.crf.config.max_span
    for rows, cols, block in plan.blocks:
        states = len(aligner.crf.states(len(cols))[0]) + 1
        if states > aligner.config.dense_state_limit:
            report.skipped_blocks.append(
                f"pair {pair.pair_id}: block of {len(rows)} x {len(cols)} sentences has {states} states "
                f"> dense_state_limit {aligner.config.dense_state_limit}"
            )
            continue
        row_of = {int(j): r for r, j in enumerate(rows)}
        col_of = {int(i): c for c, i in enumerate(cols)}
        local = [(row_of[j], col_of[i]) for j, i in gold if j in row_of and i in col_of and plan.mask[j, i]]
        covered.update((int(rows[r]), int(cols[c])) for r, c in local)
        gold_states = groups_to_states([([c], [r]) for r, c in local], len(rows), len(cols), max_span)  # (r,)
        report.gold_pairs_beyond_span += len(local) - _represented(local, gold_states, aligner, len(cols))
        sim = torch.as_tensor(aligner.config.emission_scale * block, dtype=torch.float32)  # (r, c)
        examples.append(_Example(sim, gold_states))
    report.gold_pairs_outside_blocks += len(gold - covered)
    return examples


def _represented(local: list[tuple[int, int]], gold_states: list[int], aligner: Aligner, c: int) -> int:
    """How many of the block-local gold pairs (r, c) the gold states' spans cover."""
    starts, ends = aligner.crf.states(c)  # (K,), (K,)
    return sum(1 for r, col in local if gold_states[r] and starts[gold_states[r] - 1] <= col < ends[gold_states[r] - 1])


def _mean_log_likelihood(aligner: Aligner, examples: Sequence[_Example]) -> float:
    """Mean log P(gold states | block) over the examples, without gradients."""
    crf = aligner.crf.eval()
    with torch.no_grad():
        total = sum(float(crf(example.sim.to(aligner.device), example.gold_states)) for example in examples)
    return total / len(examples)


def _tuned_partial_threshold(aligner: Aligner, pairs: Sequence[GoldPair], matrices: Sequence[np.ndarray]) -> float:
    """The grid value of ``partial_threshold`` with the best Task-2 sentence-pair F1 on these pairs.

    Each pair is decoded once; only the labels change with the threshold (a group is partial
    when its score is below it), so the sweep re-evaluates, it does not re-decode.
    """
    decoded = []
    for pair, similarity in zip(pairs, matrices):
        m, n = similarity.shape
        if m == 0 or n == 0:
            continue
        result = aligner.align(
            pair.complex_sentences, pair.simple_sentences, pair.complex_paragraphs, pair.simple_paragraphs,
            similarity=similarity,
        )  # fmt: skip
        decoded.append((pair.groups, result.groups, m, n))
    best_threshold, best_f1 = aligner.config.partial_threshold, -1.0
    for threshold in PARTIAL_THRESHOLD_GRID:
        total: EvaluationReport | None = None
        for gold, predicted, m, n in decoded:
            relabelled = [_with_label(group, threshold) for group in predicted]
            report = evaluate_pairs(gold, relabelled, m, n)
            total = report if total is None else total + report
        f1 = total.sentence_task2.f1 if total is not None else 0.0
        if f1 > best_f1:  # strict: the lowest threshold wins ties (fewest groups demoted to partial)
            best_threshold, best_f1 = threshold, f1
    return best_threshold


def _with_label(group: AlignmentGroup, threshold: float) -> AlignmentGroup:
    score = group.score if group.score is not None else 1.0
    return replace(group, label="partial" if score < threshold else "aligned")
