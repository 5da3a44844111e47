"""Word-level differences between a complex and a simple sentence, as the inspection page and the annotation screen mark them."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

WORD_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]")  # words (with inner apostrophes/hyphens) and single punctuation marks


@dataclass
class DiffSegment:
    kind: str  # equal | del | ins
    text: str
    space_before: bool
    replaced: bool = False  # part of a replacement (marked on both sides) rather than a pure deletion/insertion


@dataclass
class WordDiff:
    complex_segments: list[DiffSegment]
    simple_segments: list[DiffSegment]


def word_diff(complex_text: str, simple_text: str) -> WordDiff:
    """Word-level differences: words only in the complex sentence are ``del``, words new in the simple one ``ins``.

    Tokens are words and punctuation marks, compared case-insensitively; adjacent tokens
    of the same kind are merged into one segment so the page shows ``<del>a few words</del>``.
    """
    complex_tokens = _tokens(complex_text)
    simple_tokens = _tokens(simple_text)
    matcher = difflib.SequenceMatcher(
        a=[text.casefold() for text, _ in complex_tokens], b=[text.casefold() for text, _ in simple_tokens], autojunk=False
    )
    complex_kinds: list[tuple[str, bool]] = []
    simple_kinds: list[tuple[str, bool]] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            complex_kinds += [("equal", False)] * (a1 - a0)
            simple_kinds += [("equal", False)] * (b1 - b0)
        else:
            complex_kinds += [("del", tag == "replace")] * (a1 - a0)
            simple_kinds += [("ins", tag == "replace")] * (b1 - b0)
    return WordDiff(_segments(complex_tokens, complex_kinds), _segments(simple_tokens, simple_kinds))


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(token, preceded by whitespace) for each word or punctuation mark."""
    return [(match.group(), match.start() > 0 and text[match.start() - 1].isspace()) for match in WORD_TOKEN.finditer(text)]


def _segments(tokens: list[tuple[str, bool]], kinds: list[tuple[str, bool]]) -> list[DiffSegment]:
    segments: list[DiffSegment] = []
    for (text, space), (kind, replaced) in zip(tokens, kinds):
        last = segments[-1] if segments else None
        if last is not None and last.kind == kind and last.replaced == replaced:
            last.text += (" " if space else "") + text
        else:
            segments.append(DiffSegment(kind=kind, text=text, space_before=space and bool(segments), replaced=replaced))
    return segments
