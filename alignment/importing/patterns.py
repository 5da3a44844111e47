"""User-supplied regular expressions (the file-name and level-header patterns), run with a time bound.

Python's ``re`` backtracks without limit: ``(?P<id>(a|a)+)b`` on a 30-character
name runs for minutes and blocks the web process. Patterns are therefore
compiled and run with the ``regex`` package, which accepts the same syntax
(named groups ``(?P<id>…)``, inline flags such as ``(?i)``) and stops a match
after ``MATCH_TIMEOUT_SECONDS``. A pattern that is too long, invalid or slow is
reported as a ``ValueError`` naming the pattern (and the text it was slow on).

The bound per name is not enough for a request: a hundred names at just under 0.1 s each
held a web process for 9 s, and a few such requests stalled the site. So the check a page
or the API runs over all uploaded names (:func:`check_pattern_on_names`) has one budget for
all of them together, ``NAMES_BUDGET_SECONDS``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import lru_cache

import regex

PATTERN_MAX_LENGTH = 200
MATCH_TIMEOUT_SECONDS = 0.1  # per name or header line; ordinary patterns take microseconds
NAMES_BUDGET_SECONDS = 1.0  # every name of one request together (check_pattern_on_names)
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


def match_bounded(
    pattern: str, text: str, *, label: str, required_groups: tuple[str, ...] = (), timeout: float = MATCH_TIMEOUT_SECONDS
) -> regex.Match | None:
    """``pattern.match(text)`` that gives up after ``timeout`` seconds with :class:`PatternTooSlow`."""
    compiled = compile_pattern(pattern, label=label, required_groups=required_groups)
    try:
        return compiled.match(text, timeout=timeout)
    except TimeoutError:
        shown = text if len(text) <= _SHOWN_TEXT_CHARS else text[:_SHOWN_TEXT_CHARS] + "…"
        raise PatternTooSlow(f"the {label} {pattern!r} took too long on {shown!r}; simplify it") from None


def _now() -> float:
    return time.monotonic()


def check_pattern_on_names(
    pattern: str, names: Iterable[str], *, label: str, required_groups: tuple[str, ...] = (), budget_seconds: float = NAMES_BUDGET_SECONDS
) -> None:
    """Run ``pattern`` on every name, before anything is imported, within ``budget_seconds`` for all of them together.

    :class:`PatternTooSlow` at the first name it is too slow on (over MATCH_TIMEOUT_SECONDS), or
    once the names together have taken the budget. Without this check an import of a thousand
    files would spend the time bound on each of them.
    """
    deadline = _now() + budget_seconds
    for checked, name in enumerate(names):  # checked: names done before this one
        remaining = deadline - _now()
        if remaining <= 0:
            raise PatternTooSlow(
                f"the {label} {pattern!r} took more than {budget_seconds:g} s on the first {checked} file names "
                f"(at most {budget_seconds:g} s for all names of one upload); simplify it"
            )
        try:
            match_bounded(pattern, name, label=label, required_groups=required_groups, timeout=min(MATCH_TIMEOUT_SECONDS, remaining))
        except PatternTooSlow:
            if remaining >= MATCH_TIMEOUT_SECONDS:
                raise  # slow on this one name
            raise PatternTooSlow(
                f"the {label} {pattern!r} took more than {budget_seconds:g} s on the first {checked + 1} file names "
                f"(at most {budget_seconds:g} s for all names of one upload); simplify it"
            ) from None
