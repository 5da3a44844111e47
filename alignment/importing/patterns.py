"""User-supplied regular expressions (the file-name and level-header patterns), run with a time bound.

Python's ``re`` backtracks without limit: ``(?P<id>(a|a)+)b`` on a 30-character
name runs for minutes and blocks the web process. Patterns are therefore
compiled and run with the ``regex`` package, which accepts the same syntax
(named groups ``(?P<id>…)``, inline flags such as ``(?i)``) and stops a match
after ``MATCH_TIMEOUT_SECONDS``. A pattern that is too long, invalid or slow is
reported as a ``ValueError`` naming the pattern (and the text it was slow on).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import regex

PATTERN_MAX_LENGTH = 200
MATCH_TIMEOUT_SECONDS = 0.1  # per name or header line; ordinary patterns take microseconds
_SHOWN_TEXT_CHARS = 40


class PatternTooSlow(ValueError):
    """A pattern ran past the time bound on one text; the message names both."""


@lru_cache(maxsize=64)
def compile_pattern(pattern: str, *, label: str, required_groups: tuple[str, ...] = ()) -> regex.Pattern:
    """The compiled pattern, or ``ValueError`` when it is too long, invalid or lacks a required named group."""
    if len(pattern) > PATTERN_MAX_LENGTH:
        raise ValueError(f"the {label} is {len(pattern)} characters long; the limit is {PATTERN_MAX_LENGTH}")
    try:
        compiled = regex.compile(pattern)  # VERSION0: the syntax and behaviour of Python's re
    except regex.error as exc:
        raise ValueError(f"the {label} is not a valid regular expression: {exc}") from None
    for group in required_groups:
        if group not in compiled.groupindex:
            raise ValueError(f"the {label} needs a named group (?P<{group}>...)")
    return compiled


def match_bounded(pattern: str, text: str, *, label: str, required_groups: tuple[str, ...] = ()) -> regex.Match | None:
    """``pattern.match(text)`` that gives up after ``MATCH_TIMEOUT_SECONDS`` with :class:`PatternTooSlow`."""
    compiled = compile_pattern(pattern, label=label, required_groups=required_groups)
    try:
        return compiled.match(text, timeout=MATCH_TIMEOUT_SECONDS)
    except TimeoutError:
        shown = text if len(text) <= _SHOWN_TEXT_CHARS else text[:_SHOWN_TEXT_CHARS] + "…"
        raise PatternTooSlow(f"the {label} {pattern!r} took too long on {shown!r}; simplify it") from None


def check_pattern_on_names(pattern: str, names: Iterable[str], *, label: str, required_groups: tuple[str, ...] = ()) -> None:
    """Run ``pattern`` on every name and stop at the first one it is too slow on, before anything is imported.

    Without this check an import of a thousand files would spend the time bound on each of them.
    """
    for name in names:
        match_bounded(pattern, name, label=label, required_groups=required_groups)
