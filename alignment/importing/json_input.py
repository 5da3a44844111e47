"""Checks for JSON from outside (JSONL imports, API bodies) that ``json`` accepts but the app cannot store.

* Deep nesting: ``json.loads`` raises ``RecursionError`` near 1,000 levels, and anything that
  walks the value afterwards (cleaning, ``json.dumps`` into a JSON column) can fail below that.
  Nothing the app reads nests more than a few levels, so deeper input is refused.
* ``"\\ud800"``: a JSON escape for half of a UTF-16 pair decodes to a lone surrogate, a ``str``
  that cannot be encoded, so saving it to PostgreSQL raises ``UnicodeEncodeError``.
* ``"\\u0000"``: PostgreSQL text and jsonb cannot hold NUL.
"""

from __future__ import annotations

import json
import re

MAX_JSON_DEPTH = 32
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """Unusable JSON; ``path`` names where (``["sentences", 3]``), empty for the document itself."""

    def __init__(self, message: str, *, path: tuple[str | int, ...] = ()) -> None:
        self.path = path
        self.reason = message
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")
        super().__init__(f"{where}: {message}" if where else message)


def json_loads_bounded(text: str | bytes, *, allow_nul: bool = False):
    """``json.loads`` that raises :class:`JsonInputError` (a ``ValueError``) for the cases above."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonInputError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    json_value_check(value, allow_nul=allow_nul)
    return value


def json_value_check(value, *, allow_nul: bool = False) -> None:
    """Raise :class:`JsonInputError` when a parsed value nests too deep or holds an unstorable string.

    Iterative, so a deep value cannot exhaust the stack here either.
    """
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) > MAX_JSON_DEPTH:
            raise JsonInputError(f"nested more than {MAX_JSON_DEPTH} levels deep", path=path[:1])
        if isinstance(item, str):
            _check_string(item, path, allow_nul=allow_nul)
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_string(key, path, allow_nul=allow_nul, what="a key")
                stack.append((child, (*path, key)))
        elif isinstance(item, list):
            stack.extend((child, (*path, index)) for index, child in enumerate(item))


def _check_string(text: str, path: tuple[str | int, ...], *, allow_nul: bool, what: str = "the text") -> None:
    surrogate = _LONE_SURROGATE.search(text)
    if surrogate:
        raise JsonInputError(
            f"{what} holds a lone surrogate \\u{ord(surrogate.group()):04x} at character {surrogate.start() + 1}, "
            "which is not a character (half of a UTF-16 pair); fix the escape",
            path=path,
        )
    if not allow_nul and "\x00" in text:
        raise JsonInputError(f"{what} holds a NUL character (\\u0000), which cannot be stored", path=path)
