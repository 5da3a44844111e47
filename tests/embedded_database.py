"""pytest plugin, loaded before pytest-django reads the settings: a throw-away embedded PostgreSQL.

Unless ``DATABASE_URL`` names a server, the test session gets its own state
directory in a temporary folder, so the settings start a fresh embedded
PostgreSQL + pgvector there. It is deleted when the last process using it
exits, and the developer's ``.data/`` is never touched.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# ONNX exports of the encoder (models_ml.similarity.encoder_backends) go to a throw-away folder, not ~/.cache.
if not os.environ.get("ENCODER_CACHE_DIR"):
    os.environ["ENCODER_CACHE_DIR"] = tempfile.mkdtemp(prefix="aligner-tests-encoders-")
    atexit.register(shutil.rmtree, os.environ["ENCODER_CACHE_DIR"], ignore_errors=True)

# Tests that assert exact alignment groups from MiniLM vectors mean MiniLM's own (fp32) vectors. The CPU default,
# int8 ONNX, quantizes activations per batch and runs on whatever int8 kernels the CPU has (AVX2 here, AVX-512
# VNNI elsewhere), which move a cosine by up to ~0.01: enough to flip a close merge. So every process of the test
# session (workers and CLIs it starts included) encodes with the fp32 ONNX export, unless a test names another
# backend: its vectors are torch's to ~2e-7 (as torch's own differ between CPUs), and a process loads it in half a
# second, where torch with transformers and sentence-transformers takes about 9 s of every worker a test starts.
# The export is made once per session, by the first process that needs it (the others wait for it). The backends'
# own tests (tests/models_ml/similarity/test_encoder_backends.py) check fp32 against torch and hold int8 to its
# documented bar on whatever CPU runs them. CONTRIBUTING.md, "Tests that depend on numerics".
os.environ["ENCODER_BACKEND"] = "onnx"

# Under pytest-xdist every worker process loads this plugin too and gets its own state directory, so its own embedded
# server, test database, models and exports: a test that restarts or kills "the" database touches only its worker's.
if not os.environ.get("DATABASE_URL"):
    os.environ["STATE_DIR"] = tempfile.mkdtemp(prefix="aligner-tests-")
    os.environ["EMBEDDED_DB_DELETE_ON_EXIT"] = "1"
    atexit.register(shutil.rmtree, os.environ["STATE_DIR"], ignore_errors=True)  # runs last: after the server is gone
