"""Faster CPU backends for a sentence-transformers encoder: ONNX Runtime (fp32 or int8) and OpenVINO.

The transformer of the (bundled) model is exported once, locally, with ``torch.onnx.export``
and cached in a folder keyed by the checksum of the source weights; nothing is downloaded.
The export is checked against PyTorch on a few sentences before it is kept (cosine ≥ 0.9999),
so a wrong export can never reach the database. int8 is ONNX Runtime's dynamic quantization of
the MatMul weights, per channel: measured against torch's vectors on OneStopEnglish sentences
(bench/encoder_backends.py) its cosine is median ≥ 0.99, 1st percentile ≥ 0.97, the bar under
which vectors count as the same encoder's.

Pooling and normalisation run in NumPy, the way sentence-transformers' Pooling module does
them (mean over the attention mask, or the CLS token). Models with other modules stay on torch.

The export also keeps the model's tokenizer (the very Rust tokenizer transformers runs, with the encoder's
truncation and padding), checked against transformers' output when it is written. Once an export exists, an
encoder loads from it alone: no torch, transformers or sentence-transformers import, about half a second in a
fresh process instead of 5-9 (a worker's first job, docs/benchmarks.md "Corpus scale"). The model itself is
loaded only when something asks for it (the word-alignment measures read its token vectors).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from models_ml.data.checkpoint import CHECKSUMS, verify_checksums, write_checksums
from models_ml.similarity.encoders import ENCODE_BATCH_SIZE

BACKENDS = ("torch", "onnx", "onnx-int8", "openvino")
FP32, INT8, TOKENIZER, META = "model.onnx", "model-int8.onnx", "tokenizer.json", "export.json"
EXPORT_FORMAT = 2  # 2: the tokenizer and the dimensions are kept, so the encoder loads without the model; 1 is made again
EXPORT_CHECK_COSINE = 0.9999  # fp32 export vs torch on the check sentences: anything less is a broken export
_CHECK_SENTENCES = (
    "The cat sat on the mat.",
    "Eine deutlich längere Zeile, die weitergeht, damit das Auffüllen (padding) mitgeprüft wird, auch bei Umlauten.",
    "Kurz.",
)


class BackendUnavailable(RuntimeError):
    """The backend cannot run this model here (missing package, unsupported pooling, failed export check)."""


def default_cache_dir() -> Path:
    """ENCODER_CACHE_DIR, else ~/.cache/sentence-aligner/encoders (the app passes its state directory's)."""
    configured = os.environ.get("ENCODER_CACHE_DIR", "")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sentence-aligner" / "encoders"


def _source_key(model_path: Path) -> str:
    """sha256 over the model folder's config and weight files: a changed model gets a new export."""
    digest = hashlib.sha256()
    names = sorted(p.name for p in model_path.iterdir() if p.suffix in {".json", ".safetensors", ".bin", ".txt"})
    if not any(name.endswith((".safetensors", ".bin")) for name in names):
        raise BackendUnavailable(f"{model_path}: no weights file (.safetensors or .bin) to export")
    for name in names:
        digest.update(name.encode())
        with (model_path / name).open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def _pooling(model) -> str:
    """ "mean" or "cls" from the model's Pooling module; BackendUnavailable for anything else."""
    names = [type(module).__name__ for module in model]
    if names[:2] != ["Transformer", "Pooling"] or any(n != "Normalize" for n in names[2:]):
        raise BackendUnavailable(f"the ONNX backends support Transformer + Pooling (+ Normalize) models, not {names}")
    pooling = model[1]
    legacy = getattr(pooling, "get_pooling_mode_str", None)  # sentence-transformers < 6
    mode = legacy() if legacy is not None else getattr(pooling, "pooling_mode", None)
    if mode not in ("mean", "cls"):
        raise BackendUnavailable(f"the ONNX backends support mean or CLS pooling, not {mode!r}")
    return mode


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    if mode == "cls":
        vectors = hidden[:, 0]
    else:
        weights = mask[..., None].astype(np.float32)
        vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


def _export(model, folder: Path, mode: str) -> None:
    """Export the transformer to ``folder``/model.onnx, check it against torch, quantize to int8, write checksums."""
    import onnxruntime
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    transformer = model[0].auto_model.eval()
    tokenizer = model.tokenizer
    sample = tokenizer(list(_CHECK_SENTENCES), padding=True, truncation=True, max_length=model.max_seq_length, return_tensors="pt")
    inputs = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors):
            return self.transformer(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    axes = {name: {0: "batch", 1: "tokens"} for name in [*inputs, "hidden"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python branches (checked below)
        torch.onnx.export(
            Hidden(), tuple(sample[name] for name in inputs), str(folder / FP32), input_names=inputs, output_names=["hidden"],
            dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
        expected = model.encode(list(_CHECK_SENTENCES), normalize_embeddings=True, convert_to_numpy=True)
    session = onnxruntime.InferenceSession(str(folder / FP32), providers=["CPUExecutionProvider"])
    hidden = session.run(None, {name: sample[name].numpy().astype(np.int64) for name in inputs})[0]
    cosine = (_pool(hidden, sample["attention_mask"].numpy(), mode) * expected).sum(axis=1)
    if cosine.min() < EXPORT_CHECK_COSINE:
        raise BackendUnavailable(f"the ONNX export disagrees with torch (cosine {cosine.min():.5f} < {EXPORT_CHECK_COSINE}); use torch")
    quantize_dynamic(str(folder / FP32), str(folder / INT8), per_channel=True, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    kept = _keep_tokenizer(model.tokenizer, folder, inputs, model.max_seq_length)
    meta = {
        "format": EXPORT_FORMAT, "inputs": inputs, "pooling": mode, "max_length": model.max_seq_length,
        "dimensions": int(expected.shape[1]), "check_cosine": float(cosine.min()), "tokenizer": kept,
    }  # fmt: skip
    (folder / META).write_text(json.dumps(meta))
    write_checksums(folder, _files(meta))


def _keep_tokenizer(tokenizer, folder: Path, inputs: list[str], max_length: int) -> bool:
    """Save the Rust tokenizer behind transformers' ``tokenizer``, set up as the encoder calls it; whether it was kept.

    Kept only when it gives transformers' ids, masks and type ids on the check sentences and on one past
    ``max_length`` (truncation): a slow (Python) tokenizer, or one whose output differs, leaves the encoder
    loading the model as before.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    from tokenizers import Tokenizer

    fast = Tokenizer.from_str(backend.to_str())
    fast.enable_truncation(max_length, stride=0, strategy="longest_first", direction=tokenizer.truncation_side)
    fast.enable_padding(
        direction=tokenizer.padding_side, pad_id=tokenizer.pad_token_id, pad_type_id=tokenizer.pad_token_type_id, pad_token=tokenizer.pad_token
    )  # fmt: skip
    texts = [*_CHECK_SENTENCES, "word " * (2 * max_length)]
    expected = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")
    got = _fast_tokens(fast, texts)
    if any(not np.array_equal(np.asarray(expected[name], dtype=np.int64), got[name]) for name in inputs):
        return False
    fast.save(str(folder / TOKENIZER))
    return True


def _fast_tokens(tokenizer, texts: list[str]) -> dict[str, np.ndarray]:
    """``tokenizers`` output as transformers gives it: int64 arrays padded to the longest text."""
    encodings = tokenizer.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def _files(meta: dict) -> list[str]:
    return [FP32, INT8, META, *([TOKENIZER] if meta.get("tokenizer") else [])]


def _export_folder(source: Path, cache_dir: Path) -> Path:
    return cache_dir / f"{source.name}-{_source_key(source)}"


def _finished_export(folder: Path) -> dict | None:
    """The export's settings when ``folder`` holds a whole export of the current format with intact files, else None."""
    if not folder.is_dir():
        return None
    try:
        verify_checksums(folder, [META], "ONNX encoder export")  # the settings first (small), then the files they name, once
        meta = json.loads((folder / META).read_text())
        if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
            return None
        verify_checksums(folder, _files(meta), "ONNX encoder export")
    except ValueError:  # json's errors are ValueErrors too
        return None
    return meta


def exported_model_dir(model, model_path: str, cache_dir: Path) -> Path:
    """The cached export of ``model`` (made now when missing or when its files fail their checksums)."""
    source = Path(model_path)
    if not source.is_dir():
        raise BackendUnavailable(f"{model_path}: the ONNX backends export a local model folder")
    mode = _pooling(model)
    folder = _export_folder(source, cache_dir)
    if _finished_export(folder) is not None:
        return folder
    cache_dir.mkdir(parents=True, exist_ok=True)
    # One process exports (about 20 s); others that find no export meanwhile (runapp's workers on a fresh state
    # directory, a test session's processes) wait for it and load its export instead of making their own.
    with (cache_dir / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process dies
        if _finished_export(folder) is not None:
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # derived data (altered, or of an earlier format): export again
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache_dir))
        try:
            _export(model, staging, mode)
            try:
                staging.rename(folder)  # atomic; a process that does not lock (an older version) may have finished first
            except OSError:
                if not (folder / CHECKSUMS).is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


@dataclass
class OnnxEncoder:
    """The :class:`~models_ml.similarity.encoders.SentenceEncoder` interface over an exported model (ONNX Runtime or OpenVINO)."""

    name: str
    dimensions: int
    backend: str
    tokenize: Callable[[list[str]], Mapping[str, Any]]  # texts -> int arrays by input name, padded to the longest text
    run: Callable[[dict], Any]  # {input name: int64 array} -> hidden states (batch, tokens, dim)
    inputs: list[str]
    pooling: str
    load_model: Callable[[], object]  # the SentenceTransformer it was exported from

    @cached_property
    def model(self) -> object:
        """The SentenceTransformer (the word-alignment measures read its token vectors), loaded when first asked for."""
        return self.load_model()

    def encode(self, sentences: Sequence[str], *, batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
        texts = list(sentences)
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda k: -len(texts[k]))  # similar lengths together: less padding
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            tokens = self.tokenize([texts[k] for k in chunk])
            hidden = self.run({name: np.asarray(tokens[name], dtype=np.int64) for name in self.inputs})
            vectors[chunk] = _pool(np.asarray(hidden, dtype=np.float32), np.asarray(tokens["attention_mask"]), self.pooling)
        return vectors


def onnx_encoder(
    name: str, model_path: str, backend: str, load_model: Callable[[], tuple[Any, str, int]], *, cache_dir: Path | None = None,
    threads: int = 0,
) -> OnnxEncoder:  # fmt: skip
    """The model at ``model_path`` served by ``backend`` ("onnx", "onnx-int8" or "openvino") from its cached export.

    ``load_model`` gives ``(SentenceTransformer, path, dimensions)``: called only when there is no finished export to
    load from (the model is exported first) or when the encoder's ``model`` is asked for.
    """
    if backend not in BACKENDS[1:]:
        raise BackendUnavailable(f"unknown encoder backend {backend!r}; backends: {', '.join(BACKENDS)}")
    cache = cache_dir or default_cache_dir()
    source = Path(model_path)
    folder = _export_folder(source, cache) if source.is_dir() else None
    meta = _finished_export(folder) if folder is not None else None
    if meta is not None and meta["tokenizer"]:
        from tokenizers import Tokenizer

        fast = Tokenizer.from_file(str(folder / TOKENIZER))
        return _served(name, folder, meta, backend, threads, lambda texts: _fast_tokens(fast, texts), lambda: load_model()[0])
    model, path, _ = load_model()
    folder = exported_model_dir(model, path, cache)
    meta = json.loads((folder / META).read_text())
    max_length = meta["max_length"]

    def tokenize(texts: list[str]) -> Mapping[str, Any]:
        return model.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")

    return _served(name, folder, meta, backend, threads, tokenize, lambda: model)


def _served(
    name: str, folder: Path, meta: dict, backend: str, threads: int, tokenize: Callable, load_model: Callable[[], object]
) -> OnnxEncoder:  # fmt: skip
    file = folder / (INT8 if backend == "onnx-int8" else FP32)
    if backend == "openvino":
        try:
            import openvino
        except ImportError:
            raise BackendUnavailable("ENCODER_BACKEND=openvino needs the openvino package (pip install openvino)") from None
        config = {"INFERENCE_NUM_THREADS": threads} if threads else {}
        compiled = openvino.Core().compile_model(str(file), "CPU", config)

        def run(feed: dict) -> np.ndarray:
            return compiled(feed)[0]
    else:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # 0: one per core
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])

        def run(feed: dict) -> np.ndarray:
            return session.run(None, feed)[0]

    return OnnxEncoder(
        name=name, dimensions=int(meta["dimensions"]), backend=backend, tokenize=tokenize, run=run, inputs=meta["inputs"],
        pooling=meta["pooling"], load_model=load_model,
    )  # fmt: skip
