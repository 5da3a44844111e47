"""Fine-tuning the cross-encoder pair classifier (:mod:`models_ml.similarity.cross_encoder`) on gold groups.

Examples are (simple, complex, label) triples: every pair inside a gold group with the group's
label, plus sampled "not_aligned" pairs from outside every group. :func:`train_pair_classifier`
runs AdamW over them; :func:`fine_tune_pair_classifier` adds dev-set early stopping on gold
document pairs, as the CLI's ``train --pair-classifier-output`` and the app's training job use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from models_ml.data.evaluate import pair_labels_from_groups
from models_ml.data.io import AlignmentGroup, GoldPair
from models_ml.similarity.cross_encoder import LABEL_INDEX, LABELS, PairClassifier, PairExample
from models_ml.similarity.measures import validate_sentences

__all__ = [
    "PairTrainingConfig",
    "fine_tune_pair_classifier",
    "pair_classifier_report",
    "pair_examples",
    "pair_examples_from_groups",
    "train_pair_classifier",
]


# ----- one document pair's examples, and the optimiser loop ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairTrainingConfig:
    """Fine-tuning hyper-parameters (the paper: lr 2e-5, batch 8, max length 128).

    learning_rate: AdamW rate of the encoder; head_learning_rate: of the fresh head, which
        starts from nothing and needs a larger rate. Both warm up linearly over
        ``warmup_fraction`` of the steps, then decay linearly towards 0.
    class_weights: cross-entropy weight per class in :data:`LABELS` order (None: equal).
    max_steps: stop after this many optimiser steps (None: run all epochs).
    """

    epochs: int = 1
    learning_rate: float = 2e-5
    head_learning_rate: float = 1e-3
    batch_size: int = 16
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    max_grad_norm: float = 1.0
    class_weights: tuple[float, float, float] | None = None
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(f"epochs and batch_size must be >= 1, got {self.epochs} and {self.batch_size}")
        if self.learning_rate <= 0 or self.head_learning_rate <= 0 or self.weight_decay < 0:
            raise ValueError("learning rates must be > 0 and weight_decay >= 0")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")
        if self.class_weights is not None and (len(self.class_weights) != len(LABELS) or min(self.class_weights) < 0):
            raise ValueError(f"class_weights needs {len(LABELS)} non-negative weights, got {self.class_weights}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1 or None, got {self.max_steps}")


def _label_indices(examples: Sequence[PairExample]) -> list[int]:
    indices = []
    for number, example in enumerate(examples):
        if not (isinstance(example, tuple | list) and len(example) == 3):
            raise ValueError(f"example {number} must be (simple, complex, label), got {example!r:.80}")
        simple, complex_sentence, label = example
        if not isinstance(simple, str) or not isinstance(complex_sentence, str):
            raise ValueError(f"example {number}: simple and complex must be strings")  # bad content
        if label not in LABEL_INDEX:
            raise ValueError(f"example {number} has label {label!r}; labels must be one of {LABELS}")
        indices.append(LABEL_INDEX[label])
    return indices


def _optimizer(model: PairClassifier, config: PairTrainingConfig, total_steps: int) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over encoder (biases and LayerNorm without weight decay, as BERT) and head, with linear warm-up and decay."""
    warmup = math.ceil(config.warmup_fraction * total_steps)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    named = list(model.encoder.named_parameters())
    exempt = [p for n, p in named if n.endswith("bias") or "LayerNorm" in n]  # no weight decay, as BERT
    decayed = [p for n, p in named if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW(
        [
            {"params": decayed, "lr": config.learning_rate, "weight_decay": config.weight_decay},
            {"params": exempt, "lr": config.learning_rate, "weight_decay": 0.0},
            {"params": list(model.head.parameters()), "lr": config.head_learning_rate, "weight_decay": 0.0},
        ]
    )
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def train_pair_classifier(
    model: PairClassifier,
    examples: Sequence[PairExample],
    config: PairTrainingConfig | None = None,
    *,
    seed: int,
    device: str,
    progress: Callable[[int, int], None] | None = None,
) -> list[float]:
    """Fine-tune ``model`` in place with AdamW and cross-entropy; returns the mean loss of each epoch run.

    ``seed`` drives the shuffling (a local generator) and the dropout masks (the global torch
    RNG is forked for the duration and restored afterwards, so callers' RNG state is untouched).
    ``progress(step, total_steps)`` is called after each optimiser step. The model is left in
    eval mode on ``device``. Over 60 lines because the epoch loop and the RNG fork around it are
    one unit: the seeded dropout masks and batch order hold only inside it.
    """
    config = config or PairTrainingConfig()
    targets = torch.tensor(_label_indices(examples), dtype=torch.long)  # (N,)
    if not examples:
        raise ValueError("train_pair_classifier needs at least one example")
    model.to(device)
    steps_per_epoch = math.ceil(len(examples) / config.batch_size)
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    optimizer, scheduler = _optimizer(model, config, total_steps)
    weight = None if config.class_weights is None else torch.tensor(config.class_weights, dtype=torch.float32, device=device)
    loss_function = nn.CrossEntropyLoss(weight=weight)
    generator = torch.Generator().manual_seed(seed)
    target = torch.device(device)
    cuda_devices = [target.index or 0] if target.type == "cuda" else []
    epoch_losses: list[float] = []
    step = 0
    with torch.random.fork_rng(devices=cuda_devices):  # dropout masks come from the forked RNG, restored after
        torch.random.default_generator.manual_seed(seed)
        for index in cuda_devices:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
        model.train()
        for _ in range(config.epochs):
            order = torch.randperm(len(examples), generator=generator)  # (N,)
            losses = []
            for start in range(0, len(examples), config.batch_size):
                if step >= total_steps:
                    break
                rows = order[start : start + config.batch_size].tolist()
                inputs = model.tokenize([examples[k][0] for k in rows], [examples[k][1] for k in rows], device)
                logits = model(**inputs)  # (batch, 3)
                loss = loss_function(logits, targets[rows].to(device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                optimizer.step()
                scheduler.step()
                step += 1
                losses.append(float(loss.detach()))
                if progress is not None:
                    progress(step, total_steps)
            if losses:
                epoch_losses.append(float(np.mean(losses)))
            if step >= total_steps:
                break
    model.eval()
    return epoch_losses


def pair_examples_from_groups(
    simple_sentences: Sequence[str],
    complex_sentences: Sequence[str],
    groups: Sequence[AlignmentGroup],
    *,
    negatives_per_positive: int,
    seed: int,
) -> list[PairExample]:
    """Labelled (simple, complex, label) examples of one document pair from its gold groups.

    Every (simple, complex) pair inside a gold group gets the group's label (a pair in two
    groups keeps the stronger one). Negatives ("not_aligned") are drawn uniformly, without
    replacement, from the pairs in no group: ``negatives_per_positive`` per positive pair,
    or all of them when there are fewer. Positives come first, in (simple, complex) order.
    """
    if negatives_per_positive < 0:
        raise ValueError(f"negatives_per_positive must be >= 0, got {negatives_per_positive}")
    simple_list = validate_sentences(simple_sentences, "simple")
    complex_list = validate_sentences(complex_sentences, "complex")
    m, n = len(simple_list), len(complex_list)
    labelled = pair_labels_from_groups(groups, m, n)  # {(simple j, complex i): label}
    examples: list[PairExample] = [(simple_list[j], complex_list[i], labelled[(j, i)]) for j, i in sorted(labelled)]
    is_positive = np.zeros((m, n), dtype=bool)  # (m, n)
    for j, i in labelled:
        is_positive[j, i] = True
    candidates = np.flatnonzero(~is_positive.ravel())  # (m n - positives,) flat indices
    count = min(candidates.size, negatives_per_positive * len(labelled))
    chosen = np.sort(np.random.default_rng(seed).choice(candidates, size=count, replace=False))  # (count,)
    examples.extend((simple_list[k // n], complex_list[k % n], "not_aligned") for k in chosen.tolist())
    return examples


# ----- gold document pairs, with dev-set early stopping ---------------------------------------


def pair_examples(pairs: Sequence[GoldPair], *, negatives_per_positive: int, seed: int) -> list:
    """Cross-encoder examples of gold document pairs: every pair inside a group, plus sampled negatives."""
    examples = []
    for index, pair in enumerate(pairs):
        examples += pair_examples_from_groups(
            pair.simple_sentences, pair.complex_sentences, pair.groups, negatives_per_positive=negatives_per_positive, seed=seed + index
        )
    return examples


def pair_classifier_report(model: object, examples: Sequence) -> dict[str, float]:
    """Task-1 P/R/F1 of the classifier's own decision (P(aligned) + P(partial) >= 0.5) on labelled examples."""
    if not examples:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "examples": 0}
    probabilities = model.predict_proba([e[0] for e in examples], [e[1] for e in examples])  # (k, 3) in LABELS order
    predicted = probabilities[:, 1] + probabilities[:, 2] >= 0.5  # (k,) partial + aligned
    gold = np.array([e[2] != "not_aligned" for e in examples])  # (k,)
    tp, fp, fn = int((predicted & gold).sum()), int((predicted & ~gold).sum()), int((~predicted & gold).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "examples": len(examples)}


def fine_tune_pair_classifier(
    pairs: Sequence[GoldPair],
    *,
    training: object | None = None,
    negatives_per_positive: int = 3,
    seed: int,
    device: str,
    model: object | None = None,
    dev_pairs: Sequence[GoldPair] = (),
    patience: int = 2,
    on_epoch: Callable[[int, float, dict[str, float] | None], None] | None = None,
) -> tuple[object, list[float], int]:
    """Fine-tune the cross-encoder on gold groups; returns (model, loss per epoch, examples).

    Starts from ``model`` (e.g. a saved version's classifier) or a fresh one (bundled MiniLM +
    head). Every pair inside a gold group is a positive with the group's label; negatives are
    drawn from the pairs in no group, ``negatives_per_positive`` per positive. With
    ``dev_pairs`` it runs one epoch at a time (the learning-rate schedule restarts each epoch),
    scores the dev examples after each, stops after ``patience`` epochs without a better dev
    F1 and keeps the best epoch's weights (epoch 0, the given weights, included).
    ``on_epoch(epoch, loss, dev report or None)`` may raise to cancel.
    """
    examples = pair_examples(pairs, negatives_per_positive=negatives_per_positive, seed=seed)
    if not examples:
        raise ValueError("no training examples: the gold has no groups")
    model = model if model is not None else PairClassifier(seed=seed)
    config = training or PairTrainingConfig()
    if not dev_pairs:
        losses = train_pair_classifier(model, examples, config, seed=seed, device=device)
        if on_epoch is not None:
            for epoch, loss in enumerate(losses, start=1):
                on_epoch(epoch, loss, None)
        return model, losses, len(examples)
    dev = pair_examples(dev_pairs, negatives_per_positive=negatives_per_positive, seed=seed + 10_000)
    model.to(device)
    best_f1 = pair_classifier_report(model, dev)["f1"]
    best_state = {name: value.detach().clone() for name, value in model.state_dict().items()}
    losses: list[float] = []
    since_best = 0
    for epoch in range(1, config.epochs + 1):
        losses += train_pair_classifier(model, examples, replace(config, epochs=1), seed=seed + epoch, device=device)
        report = pair_classifier_report(model, dev)
        if on_epoch is not None:
            on_epoch(epoch, losses[-1], report)
        if report["f1"] > best_f1:
            best_f1, since_best = report["f1"], 0
            best_state = {name: value.detach().clone() for name, value in model.state_dict().items()}
        else:
            since_best += 1
            if since_best >= patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    return model, losses, len(examples)
