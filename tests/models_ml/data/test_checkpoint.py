"""Checksummed model directories (models_ml.data.checkpoint) and the shipped default model they point to."""

from __future__ import annotations

from pathlib import Path

import pytest

from models_ml.aligning.aligner import Aligner
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR, read_json, sha256, verify_checksums, write_checksums

REPOSITORY = Path(__file__).resolve().parents[3]


def test_default_model_dir_is_the_shipped_model_and_loads() -> None:
    assert DEFAULT_MODEL_DIR == REPOSITORY / "models_ml" / "default_model"
    checksums = read_json(DEFAULT_MODEL_DIR / "checksums.json")
    assert all(sha256(DEFAULT_MODEL_DIR / name) == digest for name, digest in checksums.items())  # card included
    aligner = Aligner.load(DEFAULT_MODEL_DIR, device="cpu")  # weights_only state_dict: no pickled class paths
    assert aligner.config.measure == "learned"


def test_altered_file_is_named(tmp_path: Path) -> None:
    for name in ("config.json", "weights.pt"):
        (tmp_path / name).write_text(name, encoding="utf-8")
    write_checksums(tmp_path, ("config.json", "weights.pt"))
    verify_checksums(tmp_path, ("config.json", "weights.pt"), "test")
    (tmp_path / "weights.pt").write_text("changed", encoding="utf-8")
    with pytest.raises(ValueError, match="weights.pt: checksum mismatch"):
        verify_checksums(tmp_path, ("config.json", "weights.pt"), "test")
