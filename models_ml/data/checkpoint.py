"""Model directories with a checksum file: written after the files, checked before anything is loaded.

Both saved models (the aligner and the cross-encoder pair classifier) are a directory of
``config.json`` + a weights file + ``checksums.json`` (sha256 of each); a missing, altered
or unreadable file is a ValueError that names it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHECKSUMS = "checksums.json"
# The files of each kind of saved model, besides checksums.json. Here, where apps can read them without importing torch.
ALIGNER_FILES = ("config.json", "crf.pt")
CLASSIFIER_FILES = ("config.json", "pair_classifier.pt")
# The aligner the CLI and the app use when none is configured (bench/train_default_model.py writes it; MODEL_CARD.md there).
# Here, not in models_ml.aligning.aligner, so that settings can name it without importing torch.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "default_model"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_checksums(directory: Path, names: Sequence[str]) -> None:
    """Record the sha256 of each named file of ``directory`` in checksums.json (write it last)."""
    checksums = {name: sha256(directory / name) for name in names}
    (directory / CHECKSUMS).write_text(json.dumps(checksums, indent=2) + "\n", encoding="utf-8")


def verify_checksums(directory: Path, names: Sequence[str], kind: str) -> None:
    """ValueError naming the file when one of ``names`` or checksums.json is missing, unreadable or altered."""
    checksums_path = directory / CHECKSUMS
    for path in (checksums_path, *(directory / name for name in names)):
        if not path.is_file():
            raise ValueError(f"{path}: missing from the saved {kind} directory")
    checksums = read_json(checksums_path)
    for name in names:
        if not isinstance(checksums, dict) or checksums.get(name) != sha256(directory / name):
            raise ValueError(f"{directory / name}: checksum mismatch with {checksums_path}; the file was altered")


def read_json(path: Path) -> Any:
    """The parsed JSON of ``path``; ValueError naming the file when it is not valid JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
