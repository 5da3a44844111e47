"""Encoder backends for the end-to-end benches: ``--backends``, one export per backend, the worker's environment.

The benches time every backend in turn in one run. Each backend is loaded once in the bench's own
process first, so an ONNX export (made once, into the run's ENCODER_CACHE_DIR) is timed on its own and
never counted in a job; the worker processes then get the backend through ENCODER_BACKEND and read
the same cache. Between backends the encoder's stored vectors and its HNSW index are dropped, so every
backend's embedding job starts from the same empty table, as the first embedding of a corpus does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _django import REPO_ROOT, database_url

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # --backends is checked against models_ml's list before Django starts

DEFAULT_BACKENDS = "torch,onnx-int8"


def parse_backends(text: str) -> list[str]:
    """``torch,onnx-int8`` -> ["torch", "onnx-int8"]; an unknown name is an argparse error that lists the known ones."""
    from models_ml.similarity.encoder_backends import BACKENDS

    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BACKENDS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown backend(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(BACKENDS)}")
    return list(dict.fromkeys(chosen))


def add_backends_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backends", type=parse_backends, default=DEFAULT_BACKENDS,
        help=f"encoder backends to time in turn, comma-separated (default {DEFAULT_BACKENDS}; also onnx, openvino)",
    )  # fmt: skip


def load_backend(backend: str, name: str):
    """The encoder ``name`` on ``backend`` (CPU, ENCODER_CACHE_DIR from the settings) and the seconds its load and export took."""
    from django.conf import settings

    from models_ml.similarity.encoders import load_sentence_encoder

    started = time.perf_counter()
    encoder = load_sentence_encoder(
        name, device="cpu", backend=backend, cache_dir=str(settings.ENCODER_CACHE_DIR), threads=settings.ENCODER_THREADS
    )
    return encoder, time.perf_counter() - started


def run_worker(queue: str, backend: str, **extra_env: str) -> float:
    """Run ``manage.py procrastinate worker --one-shot`` on ``queue`` with ``backend``; returns its wall-clock seconds."""
    from django.conf import settings

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "ENCODER_BACKEND": backend,
        "ENCODER_DEVICE": "cpu",
        "ENCODER_CACHE_DIR": str(settings.ENCODER_CACHE_DIR),
        **extra_env,
    }
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "procrastinate", "worker", "--queues", queue, "--one-shot"], env=env, check=True)
    return time.perf_counter() - started


def encoder_vectors_drop(name: str) -> None:
    """Delete the encoder ``name``'s stored vectors and its HNSW index, so the next backend embeds from scratch."""
    from django.db import connection

    from alignment.models import Encoder

    for encoder in Encoder.objects.filter(name=name):
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {encoder.index_name}")
        encoder.delete()  # cascades to its SentenceEmbedding rows
