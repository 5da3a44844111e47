"""Cross-encoder pair classifier: P(not aligned / partial / aligned) for one (simple, complex) pair.

Why a cross-encoder: the bi-encoder cosine of :mod:`models_ml.similarity.measures` embeds each sentence
alone; Jiang et al. (2020, seed 002) instead fine-tune BERT on sentence *pairs*, so attention
sees both sentences at once and can notice a missing clause. Here the two sentences are one
tokenised pair ``[CLS] simple [SEP] complex [SEP]`` (truncated "longest_first" to
``max_length`` tokens), the encoder's last hidden states are pooled (mean over real tokens by
default, as MiniLM was trained; or the [CLS] vector, as in the paper) and a linear head
classifies the pooled vector into :data:`LABELS`.

The encoder starts from the bundled all-MiniLM-L6-v2 weights (nothing is downloaded); the
head starts random, so an untrained classifier's probabilities are meaningless until
:func:`models_ml.similarity.cross_encoder_training.train_pair_classifier` has fine-tuned it
on labelled pairs.

:class:`CrossEncoderMeasure` puts the classifier behind the ``SimilarityMeasure`` interface:
score = P(partial) + P(aligned), the probability that the pair is not "not aligned".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from models_ml.data.checkpoint import CLASSIFIER_FILES, read_json, verify_checksums, write_checksums
from models_ml.labels import ALIGNED, NOT_ALIGNED, PARTIAL
from models_ml.similarity.encoders import DEFAULT_ENCODER, EncoderUnavailable, resolve_model_path
from models_ml.similarity.measures import validate_sentences

__all__ = [
    "LABELS",
    "CrossEncoderConfig",
    "CrossEncoderMeasure",
    "PairClassifier",
    "build_cross_encoder_measure",
    "load_pair_classifier",
    "save_pair_classifier",
]

LABELS = (NOT_ALIGNED, PARTIAL, ALIGNED)  # class indices 0, 1, 2: the order trained checkpoints store
LABEL_INDEX = {label: index for index, label in enumerate(LABELS)}
POOLINGS = ("mean", "cls")
MODEL_FILES = CLASSIFIER_FILES
DEFAULT_CHUNK_PAIRS = 4096

PairExample = tuple[str, str, str]  # (simple sentence, complex sentence, label in LABELS)


@dataclass(frozen=True)
class CrossEncoderConfig:
    """What rebuilds a :class:`PairClassifier`; saved as config.json beside the weights.

    encoder: sentence-transformers name or local folder of the starting transformer (the
        tokenizer comes from there too); the default is the bundled MiniLM.
    max_length: token budget of the *pair*, special tokens included (the paper uses 128).
    pooling: "mean" (mean of the last hidden states over real tokens) or "cls".
    dropout: dropout on the pooled vector before the head (the encoder keeps its own).
    batch_size: pairs per forward pass at inference.
    """

    encoder: str = DEFAULT_ENCODER
    max_length: int = 128
    pooling: str = "mean"
    dropout: float = 0.1
    batch_size: int = 64

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.max_length < 8:
            raise ValueError(f"max_length must be >= 8 tokens, got {self.max_length}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    @classmethod
    def from_dict(cls, data: Any) -> CrossEncoderConfig:
        """Inverse of ``dataclasses.asdict``; unknown keys raise ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"cross-encoder config must be a JSON object, got {type(data).__name__}")  # bad content
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown cross-encoder config keys {unknown}; known keys: {', '.join(sorted(known))}")
        return cls(**data)


class PairClassifier(nn.Module):
    """Transformer encoder + dropout + Linear(hidden, 3) over a tokenised sentence pair.

    ``seed`` initialises the head (normal, std 0.02, zero bias, as BERT initialises its
    classifiers) with a local generator; the encoder weights come from ``config.encoder``.
    The model is created on the CPU; move it with ``.to(device)``.
    """

    def __init__(self, config: CrossEncoderConfig | None = None, *, seed: int = 0) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.config = config or CrossEncoderConfig()
        path = resolve_model_path(self.config.encoder)
        if not Path(path).expanduser().is_dir():
            raise EncoderUnavailable(
                f"encoder {self.config.encoder!r} is neither the bundled MiniLM nor a local folder; "
                "the cross-encoder never downloads models"
            )
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.encoder = AutoModel.from_pretrained(path, local_files_only=True)
        hidden = int(self.encoder.config.hidden_size)
        self.dropout = nn.Dropout(self.config.dropout)
        self.head = nn.Linear(hidden, len(LABELS))
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(self.head.weight.shape, generator=generator) * 0.02)  # (3, hidden)
            self.head.bias.zero_()

    @property
    def device(self) -> torch.device:
        return self.head.weight.device  # the whole model lives on one device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Class logits (b, 3) for token ids (b, t), attention mask (b, t) and optional segment ids (b, t)."""
        if input_ids.shape != attention_mask.shape or input_ids.ndim != 2:
            raise ValueError(
                f"input_ids and attention_mask must both be (batch, tokens), got {tuple(input_ids.shape)} and {tuple(attention_mask.shape)}"
            )
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state  # (b, t, h)
        if self.config.pooling == "cls":
            pooled = hidden[:, 0]  # (b, h)
        else:
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (b, t, 1)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)  # (b, h)
        return self.head(self.dropout(pooled))  # (b, 3)

    def tokenize(self, simple: Sequence[str], complex: Sequence[str], device: torch.device | str) -> dict[str, torch.Tensor]:
        """One padded batch of ``(simple[k], complex[k])`` pairs: tensors of shape (b, t) on ``device``."""
        batch = self.tokenizer(
            list(simple),
            list(complex),
            truncation="longest_first",
            max_length=self.config.max_length,
            padding=True,
            return_tensors="pt",
        )
        keys = ("input_ids", "attention_mask", "token_type_ids")
        return {key: batch[key].to(device) for key in keys if key in batch}

    def predict_proba(
        self,
        simple: Sequence[str],
        complex: Sequence[str],
        *,
        device: str | None = None,
        batch_size: int | None = None,
    ) -> np.ndarray:
        """Class probabilities (b, 3) float32, columns in :data:`LABELS` order, for the pairs (simple[k], complex[k]).

        Runs in eval mode under ``torch.no_grad`` on ``device`` (None: where the model is) and
        puts the model back in its previous mode afterwards. Pairs are sorted by length so a
        batch pads little; rows come back in the input order.
        """
        simple_list = validate_sentences(simple, "simple")
        complex_list = validate_sentences(complex, "complex")
        if len(simple_list) != len(complex_list):
            raise ValueError(f"predict_proba scores pairs: got {len(simple_list)} simple and {len(complex_list)} complex sentences")
        size = batch_size or self.config.batch_size
        if size < 1:
            raise ValueError(f"batch_size must be >= 1, got {size}")
        if device is not None:
            self.to(device)
        probabilities = np.zeros((len(simple_list), len(LABELS)), dtype=np.float32)  # (b, 3)
        lengths = np.array([len(s) + len(c) for s, c in zip(simple_list, complex_list)])  # (b,) characters
        order = np.argsort(-lengths, kind="stable")  # (b,) longest first: the first batch shows peak memory
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(order), size):
                    rows = order[start : start + size]  # (batch,)
                    inputs = self.tokenize([simple_list[k] for k in rows], [complex_list[k] for k in rows], self.device)
                    logits = self(**inputs)  # (batch, 3)
                    probabilities[rows] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
        finally:
            self.train(was_training)
        return probabilities


class CrossEncoderMeasure:
    """``SimilarityMeasure`` of a :class:`PairClassifier`: score = P(partial) + P(aligned).

    Cost: every one of the m x n pairs is a transformer pass (the bi-encoder needs m + n);
    the bundled MiniLM on 2 CPU cores does about 40-50 pairs/s, so a 50 x 50 document pair
    takes about a minute. Pairs are tokenised and scored ``chunk_pairs`` at a time, so memory
    is bounded by one chunk plus the (m, n) float32 result. A pair with a blank
    (whitespace-only) sentence is not sent to the model and scores 0.

    With a freshly initialised classifier (no fine-tuning) the scores are meaningless.
    """

    name = "cross_encoder"

    def __init__(
        self,
        classifier: PairClassifier,
        *,
        device: str | None = None,
        batch_size: int | None = None,
        chunk_pairs: int = DEFAULT_CHUNK_PAIRS,
    ) -> None:
        if chunk_pairs < 1 or (batch_size is not None and batch_size < 1):
            raise ValueError(f"chunk_pairs and batch_size must be >= 1, got {chunk_pairs} and {batch_size}")
        self.classifier = classifier
        self.device = device
        self.batch_size = batch_size
        self.chunk_pairs = chunk_pairs

    def score(self, simple: Sequence[str], complex: Sequence[str]) -> np.ndarray:
        simple_list = validate_sentences(simple, "simple")
        complex_list = validate_sentences(complex, "complex")
        scores = np.zeros((len(simple_list), len(complex_list)), dtype=np.float32)  # (m, n)
        simple_rows = np.flatnonzero([bool(s.strip()) for s in simple_list])  # (m',) non-blank
        complex_cols = np.flatnonzero([bool(c.strip()) for c in complex_list])  # (n',) non-blank
        total = simple_rows.size * complex_cols.size
        for start in range(0, total, self.chunk_pairs):
            flat = np.arange(start, min(start + self.chunk_pairs, total))  # (chunk,) into the (m', n') grid
            rows = simple_rows[flat // complex_cols.size]  # (chunk,)
            cols = complex_cols[flat % complex_cols.size]  # (chunk,)
            probabilities = self.classifier.predict_proba(
                [simple_list[j] for j in rows],
                [complex_list[i] for i in cols],
                device=self.device,
                batch_size=self.batch_size,
            )  # (chunk, 3)
            scores[rows, cols] = probabilities[:, LABEL_INDEX["partial"]] + probabilities[:, LABEL_INDEX["aligned"]]
        return np.clip(scores, 0.0, 1.0)


def build_cross_encoder_measure(
    *,
    device: str = "",
    model_dir: str | Path | None = None,
    batch_size: int | None = None,
    chunk_pairs: int = DEFAULT_CHUNK_PAIRS,
    seed: int = 0,
) -> CrossEncoderMeasure:
    """The measure of a saved classifier (``model_dir``) or, without one, of an untrained one (meaningless scores)."""
    target = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if model_dir is None:
        classifier = PairClassifier(seed=seed).to(target).eval()
    else:
        classifier = load_pair_classifier(model_dir, device=target)
    return CrossEncoderMeasure(classifier, device=target, batch_size=batch_size, chunk_pairs=chunk_pairs)


# ----- persistence -------------------------------------------------------------------------------


def save_pair_classifier(model: PairClassifier, directory: str | Path) -> None:
    """Write config.json, pair_classifier.pt (the state_dict: encoder + head) and checksums.json (sha256 of both).

    The tokenizer is not copied: it is rebuilt from ``config.encoder`` on load.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(asdict(model.config), indent=2) + "\n", encoding="utf-8")
    state = {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    torch.save(state, directory / "pair_classifier.pt")
    write_checksums(directory, MODEL_FILES)


def load_pair_classifier(directory: str | Path, *, device: str) -> PairClassifier:
    """Rebuild a saved classifier on ``device`` in eval mode; ValueError naming the file when one is missing or altered."""
    directory = Path(directory)
    verify_checksums(directory, MODEL_FILES, "pair-classifier")
    config_path = directory / "config.json"
    try:
        config = CrossEncoderConfig.from_dict(read_json(config_path))
    except (ValueError, TypeError) as error:
        message = str(error)
        raise ValueError(message if message.startswith(str(config_path)) else f"{config_path}: {message}") from None
    model = PairClassifier(config)
    weights_path = directory / "pair_classifier.pt"
    try:
        model.load_state_dict(torch.load(weights_path, map_location="cpu", weights_only=True))
    except Exception as error:  # any unpickling or shape error means a bad file
        raise ValueError(f"{weights_path}: not a pair-classifier state_dict for this config ({error})") from None
    return model.to(device).eval()
