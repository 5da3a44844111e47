"""Files that hold secrets (the generated SECRET_KEY, the demo's passwords): owner-only from the first byte.

Writing a file and ``chmod``-ing it afterwards leaves it readable by everyone (under the
usual umask 022) for a moment, and a reader that opens it then keeps its handle. Here the
content goes into a file created with mode 0600 (``O_CREAT | O_EXCL``, so the mode is not
widened by any umask and no existing file or symlink is reused), and that file is put in
place in one step: ``os.link`` for a first creation (it fails if someone else got there
first, and then their file wins) or ``os.replace`` for an update. Readers never see a
half-written file. No Django imports: settings use this before Django is configured.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SECRET_FILE_MODE = 0o600


def _private_temp_file(path: Path, content: str) -> Path:
    """A new 0600 file beside ``path`` holding ``content``, flushed to disk."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_FILE_MODE)
    try:
        os.fchmod(descriptor, SECRET_FILE_MODE)  # os.open's mode is already masked by the umask: only narrower, but be exact
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            descriptor = -1
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        if descriptor >= 0:
            os.close(descriptor)
        temp.unlink(missing_ok=True)
        raise
    return temp


def secret_file_create(path: Path, content: str) -> str:
    """Create ``path`` (0600) holding ``content`` unless it exists; return what the file holds.

    When two processes race, exactly one file wins and both return its content.
    """
    if path.exists():
        return path.read_text(encoding="utf-8")
    temp = _private_temp_file(path, content)
    try:
        os.link(temp, path)  # atomic, and refuses to replace: FileExistsError if another process won
    except FileExistsError:
        pass
    finally:
        temp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8")


def secret_file_replace(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` (0600) in one step, replacing whatever was there."""
    temp = _private_temp_file(path, content)
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
