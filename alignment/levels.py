"""Reading levels: which of two levels is the complex one. The one home of level ordering (no database here).

A level is ranked only inside a known *scheme*, and two levels are compared only when one
scheme holds both (``A2`` and ``adv`` are never compared):

* CEFR: C2 > C1 > B2 > B1 > A2 > A1, in any case, also written ``cefr-a2`` or ``Level B1``;
* English reading levels: original > advanced (adv) > intermediate (int) > elementary (ele) > beginner > simple;
* German plain language: original / Alltagssprache / Standard > Einfache Sprache (ES) > Leichte Sprache (LS);
* numbers, as in Newsela: 0 is the original, a higher number is simpler.

"original" (or "orig") tops every named scheme: an original is never a simplification.
Levels no scheme ranks together are compared by readability: LIX, words per sentence plus the
percentage of words over six letters (Björnsson 1968; language-independent, used for German and
English alike), counted the same way on a preview's text and on stored documents.

:func:`level_order_decide` turns this into a corpus's order, most complex first: hard
constraints (the corpus's existing pairs, the order the user gave, the corpus's stored order)
are kept, and the other levels are placed by scheme or readability, with a reason for each step.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
LEVEL_MAX_CHARS = 32  # Document.level's length
LEVEL_ORDER_MAX_LEVELS = 50
LEVEL_ORDER_MAX_CHARS = 1000  # the form field: 50 levels of up to 32 characters, with commas and spaces

_ORIGINAL = ("original", "orig")
# name, then groups of spellings (letters and digits only, lower case), most complex first
_NAMED_SCHEMES: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("CEFR levels", (_ORIGINAL, ("c2",), ("c1",), ("b2",), ("b1",), ("a2",), ("a1",))),
    (
        "English reading levels",
        (
            (*_ORIGINAL, "complex"), ("advanced", "adv"), ("intermediate", "int"), ("elementary", "ele"), ("beginner",),
            ("simple", "plain", "easy"),
        ),
    ),
    (
        "German plain-language levels",
        (
            (*_ORIGINAL, "alltagssprache", "standard", "standardsprache", "standarddeutsch"),
            ("einfachesprache", "einfach", "es"),
            ("leichtesprache", "leicht", "ls"),
        ),
    ),
)  # fmt: skip
NUMBERS = "numbers (0 is the original)"
_RANKS: dict[str, dict[str, int]] = {
    name: {spelling: rank for rank, group in enumerate(groups) for spelling in group} for name, groups in _NAMED_SCHEMES
}
_CEFR_PREFIX = re.compile(r"(?:cefr|level|niveau|stufe)([abc][12])")


def _spelling(level: str) -> str:
    """``"Leichte Sprache"`` -> ``leichtesprache``, ``"cefr-A2"`` -> ``a2``: lower case, letters and digits only."""
    folded = re.sub(r"[\W_]+", "", level.casefold())
    cefr = _CEFR_PREFIX.fullmatch(folded)
    return cefr.group(1) if cefr else folded


def level_ranks(level: str) -> dict[str, float]:
    """The rank of ``level`` in each scheme that knows it (0: most complex); empty for an unknown level."""
    ranks: dict[str, float] = {}
    spelling = _spelling(level)
    for name, table in _RANKS.items():
        if spelling in table:
            ranks[name] = table[spelling]
    try:
        number = float(level)
    except ValueError:
        return ranks
    if number == number and abs(number) != float("inf"):  # NaN and infinity rank nothing
        ranks[NUMBERS] = number
    return ranks


def scheme_verdict(first: str, second: str) -> tuple[bool, str] | None:
    """(``first`` is the more complex, the scheme's name) when one scheme ranks both apart, else None."""
    a, b = level_ranks(first), level_ranks(second)
    for name in a.keys() & b.keys():
        if a[name] != b[name]:
            return a[name] < b[name], name
    return None


def scheme_sort_key(level: str) -> tuple:
    """A sort key for levels without an explicit order: each scheme's levels by rank, then numbers, then names."""
    ranks = level_ranks(level)
    for index, (name, _) in enumerate(_NAMED_SCHEMES):
        if name in ranks:
            return (index, ranks[name], "")
    if NUMBERS in ranks:
        return (len(_NAMED_SCHEMES), ranks[NUMBERS], "")
    return (len(_NAMED_SCHEMES) + 1, 0, level)


# --- readability ---------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_]+")  # a run of letters; a hyphen splits (Leichte Sprache writes Bundes-Tag)
_SENTENCE_END = re.compile(r"[.!?…]+[\"'»«“”‘’)\]]*(?=\s|$)")
LONG_WORD_LETTERS = 6  # LIX: words of more than six letters are long


@dataclass(frozen=True)
class Readability:
    """Counts of a text, for comparing how hard two levels read. ``long_words`` None: not counted."""

    words: int = 0
    sentences: int = 0
    long_words: int | None = 0

    def __add__(self, other: Readability) -> Readability:
        long_words = None if self.long_words is None or other.long_words is None else self.long_words + other.long_words
        return Readability(self.words + other.words, self.sentences + other.sentences, long_words)

    @property
    def words_per_sentence(self) -> float:
        return self.words / self.sentences if self.sentences else 0.0

    @property
    def long_word_percent(self) -> float | None:
        return None if self.long_words is None else 100 * self.long_words / max(self.words, 1)

    @property
    def score(self) -> float:
        """LIX (words per sentence + % long words); words per sentence alone when long words were not counted."""
        return self.words_per_sentence + (self.long_word_percent or 0.0)

    def describe(self) -> str:
        if self.long_words is None:
            return f"{self.words_per_sentence:.1f} words per sentence"
        return f"LIX {self.score:.1f}: {self.words_per_sentence:.1f} words per sentence, {self.long_word_percent:.0f} % long words"


def readability_of_text(text: str) -> Readability:
    """Words, sentences and long words of ``text``. A line break ends a sentence (pre-split text has one per line)."""
    words = sentences = long_words = 0
    for line in text.split("\n"):
        found = _WORD.findall(line)
        if not found:
            continue
        words += len(found)
        long_words += sum(len(word) > LONG_WORD_LETTERS for word in found)
        stripped = line.rstrip()
        ends = [match.end() for match in _SENTENCE_END.finditer(stripped)]
        sentences += len(ends) + (not ends or ends[-1] != len(stripped))  # a last sentence without its full stop counts too
    return Readability(words, sentences, long_words)


def readability_verdict(first: Readability, second: Readability) -> bool:
    """Whether the text counted in ``first`` reads harder than ``second`` (a tie: the first)."""
    return first.score >= second.score


# --- a corpus's order ----------------------------------------------------------------------------


def level_order_parse(text: str) -> tuple[str, ...]:
    """``"C2, A2"`` -> ``("C2", "A2")``; ValueError naming the problem (an empty name, a repeat, too long, too many)."""
    if not text.strip():
        return ()
    levels = tuple(part.strip() for part in text.split(","))
    level_order_check(levels)
    return levels


def level_order_check(levels: Sequence[str]) -> None:
    """ValueError when ``levels`` (most complex first) cannot be an order of levels."""
    if len(levels) > LEVEL_ORDER_MAX_LEVELS:
        raise ValueError(f"{len(levels)} levels; at most {LEVEL_ORDER_MAX_LEVELS}")
    for position, level in enumerate(levels, start=1):
        if not level or not level.strip():
            raise ValueError(f"level {position} is empty: separate level names with single commas")
        if len(level) > LEVEL_MAX_CHARS:
            raise ValueError(f"level {level[:40]!r} is longer than {LEVEL_MAX_CHARS} characters")
        if level in levels[: position - 1]:
            raise ValueError(f"level {level!r} is named twice")


def level_order_refusal(order: Sequence[str], found: Sequence[str]) -> str | None:
    """Why ``order`` does not fit the levels ``found`` in the files (it names one they do not have), or None."""
    for level in order:
        if level not in found:
            near = [other for other in found if other.casefold() == level.casefold()]
            hint = f"; names are case-sensitive: did you mean {near[0]!r}?" if near else ""
            have = ", ".join(found) if found else "none could be read"
            return f"{level!r} is not a level of the files (they have: {have}){hint}"
    return None


def level_pairs(levels: Sequence[T], *, adjacent: bool) -> list[tuple[T, T]]:
    """(complex, simple) pairs of ``levels`` (or documents) sorted most complex first: every pair, or neighbours only."""
    return list(zip(levels, levels[1:])) if adjacent else list(itertools.combinations(levels, 2))


@dataclass(frozen=True)
class Constraint:
    """An order that must be kept, and what to call it in reasons ("your order", "the corpus's pairs")."""

    levels: tuple[str, ...]
    basis: str


@dataclass
class LevelOrder:
    """A decided order, most complex first, with the reason for each neighbouring pair of levels."""

    order: list[str]
    reasons: dict[tuple[str, str], str] = field(default_factory=dict)  # (complex, simple) -> why, for neighbours
    bases: dict[tuple[str, str], str] = field(default_factory=dict)  # (complex, simple) -> short basis, for every pair

    @property
    def notes(self) -> list[str]:
        """The order and why, for a report: one line per neighbouring pair, equal reasons merged."""
        if len(self.order) < 2:
            return [f"One level ({self.order[0]}): no pairs to direct."] if self.order else []
        neighbours = list(zip(self.order, self.order[1:]))
        lines = [f"Level order, most complex first: {', '.join(self.order)}."]
        run = [self.order[0]]
        for k, (first, second) in enumerate(neighbours):
            run.append(second)
            reason = self.reasons[(first, second)]
            if k == len(neighbours) - 1 or self.reasons[neighbours[k + 1]] != reason:
                lines.append(f"{' › '.join(run)}: {reason}.")
                run = [second]
        return lines

    def basis(self, complex_level: str, simple_level: str) -> str:
        return self.bases.get((complex_level, simple_level), "")


def _merge(base: list[str], constraint: Sequence[str], levels: set[str]) -> None:
    """Insert the levels of ``constraint`` missing from ``base`` after the constraint's level before them."""
    anchor = -1
    for level in constraint:
        if level not in levels:
            continue
        if level in base:
            anchor = base.index(level)
        else:
            anchor += 1
            base.insert(anchor, level)


def level_order_decide(
    levels: Iterable[str], *, constraints: Sequence[Constraint] = (), readability: Callable[[str], Readability]
) -> LevelOrder:
    """The order of ``levels``, most complex first: ``constraints`` (strongest first, and consistent with each
    other) keep their order; each other level goes before the first placed level it is more complex than, by
    scheme, else by ``readability`` (called only for levels no scheme ranks)."""
    wanted = set(levels)
    order: list[str] = []
    for constraint in constraints:
        _merge(order, constraint.levels, wanted)
    compare = _Comparer(constraints, readability)
    rest = sorted(wanted - set(order), key=lambda name: (scheme_sort_key(name), name))
    for level in sorted(rest, key=functools.cmp_to_key(lambda a, b: -1 if compare(a, b)[0] else 1)):
        position = next((i for i, placed in enumerate(order) if compare(level, placed)[0]), len(order))
        order.insert(position, level)
    decided = LevelOrder(order=order)
    for i, first in enumerate(order):
        for second in order[i + 1 :]:
            more, basis, reason = compare(first, second)
            if not more:  # the other levels put it here against its own verdict
                basis, reason = "its place among the other levels", f"placed by the order of the levels around them ({reason})"
            decided.bases[(first, second)] = basis
            if second == order[i + 1]:
                decided.reasons[(first, second)] = reason
    return decided


class _Comparer:
    """Whether one level is more complex than another, on the strongest basis that decides, and why."""

    def __init__(self, constraints: Sequence[Constraint], readability: Callable[[str], Readability]) -> None:
        self.constraints = constraints
        self.readability = functools.cache(readability)

    def __call__(self, first: str, second: str) -> tuple[bool, str, str]:
        for constraint in self.constraints:
            if first in constraint.levels and second in constraint.levels:
                more = constraint.levels.index(first) < constraint.levels.index(second)
                return more, constraint.basis, constraint.basis
        by_scheme = scheme_verdict(first, second)
        if by_scheme is not None:
            return by_scheme[0], by_scheme[1], f"{by_scheme[1]}, a known scheme"
        a, b = self.readability(first), self.readability(second)
        more = readability_verdict(a, b) if a.score != b.score else first < second
        harder, easier = (first, second) if more else (second, first)
        ra, rb = (a, b) if more else (b, a)
        return more, "readability", (
            f"{first!r} and {second!r} are not levels of one known scheme; {harder!r} reads harder "
            f"({ra.describe()}; {easier!r}: {rb.describe()}), so it is the complex side"
        )  # fmt: skip
