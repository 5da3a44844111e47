"""What every command of the CLI shares: bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import os
from pathlib import Path

from models_ml.data.io import read_sentences_file

EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Bad user input: printed as one line, exit status 2."""


def read_sentences(path: Path) -> tuple[list[str], list[int]]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return read_sentences_file(path)
    except ValueError as error:
        raise InputError(str(error)) from None


def check_writable_directory(path: Path) -> None:
    """Fail before training, not after it, when the model directory cannot be created or written."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: exists and is not a directory")
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK):
        raise InputError(f"{path}: cannot create the model directory ({ancestor} is not a writable directory)")
