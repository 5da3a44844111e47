"""Which paragraph mode fits a text file: a blank line between paragraphs, or one paragraph per line.

In blank-line mode the text reader joins the lines of a block into one paragraph. That is right for
wrapped text, whose lines stop mid-sentence, and wrong for files that put each paragraph on its own
line (OneStopEnglish): there the whole file, or all it holds between two stray blank lines, becomes
one paragraph. So the lines that blank-line mode would join to the next one decide. Wrapped text
breaks them mid-sentence, close to its wrap width; a file of one paragraph per line ends them with a
sentence, or puts a short heading on a line of its own. When most joined lines end a sentence or are
headings (shorter than half the longest line), each line is a paragraph.

Pure Python, no Django: the Import page's preview and its "auto" mode call it on the cleaned text
the reader sees (lines stripped, ``\\n`` line breaks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ParagraphMode = Literal["blank", "line"]
# The modes a text import can use, as the Import page and the report name them.
PARAGRAPH_MODE_LABELS: dict[str, str] = {
    "blank": "a blank line separates paragraphs",
    "line": "each line is a paragraph",
}
# A line ends a sentence when it ends with . ! ? or … , possibly followed by closing quotes or brackets.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’»)\]]*$")
# Above this share of joined lines ending a sentence or a heading, the lines are paragraphs, not wrapped text.
LINE_MODE_MIN_SHARE = 0.5
# A line shorter than this share of the longest line is a heading, not a line of wrapped text: word
# wrapping leaves a line short of its width by at most one word.
HEADING_MAX_SHARE = 0.5


@dataclass(frozen=True)
class LayoutGuess:
    """The paragraph mode that fits a text, with the figures behind it and a one-line reason."""

    paragraph_mode: ParagraphMode
    reason: str
    text_lines: int  # non-empty lines
    blank_breaks: int  # places where one or more blank lines separate two text lines
    joined_lines: int  # lines that blank-line mode would join to the next line
    joined_paragraph_like: int  # of those, the lines that end a sentence or are headings

    @property
    def label(self) -> str:
        return PARAGRAPH_MODE_LABELS[self.paragraph_mode]

    @property
    def modes_agree(self) -> bool:
        """True when both modes give the same paragraphs (no line would be joined to another)."""
        return self.joined_lines == 0


def _line_blocks(text: str) -> list[list[str]]:
    """Runs of consecutive non-empty lines, as the text reader groups them in blank-line mode."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def detect_paragraph_layout(text: str) -> LayoutGuess:
    """Guess the paragraph mode of a text file's cleaned text; see the module docstring for the rule."""
    blocks = _line_blocks(text)
    text_lines = sum(len(block) for block in blocks)
    blank_breaks = max(len(blocks) - 1, 0)
    joined = [line for block in blocks for line in block[:-1]]
    heading_max = HEADING_MAX_SHARE * max((len(line) for block in blocks for line in block), default=0)
    ending = sum(1 for line in joined if _SENTENCE_END.search(line) or len(line) < heading_max)
    figures = {"text_lines": text_lines, "blank_breaks": blank_breaks, "joined_lines": len(joined), "joined_paragraph_like": ending}
    if text_lines == 0:
        return LayoutGuess("blank", "no text", **figures)
    if not joined:
        if text_lines == 1:
            return LayoutGuess("blank", "one line: both modes give one paragraph", **figures)
        reason = f"{_plural(text_lines, 'line')}, each followed by a blank line: both modes give the same {text_lines:,} paragraphs"
        return LayoutGuess("blank", reason, **figures)
    lines = f"{_plural(text_lines, 'non-empty line')}, " + (
        "no blank lines" if not blank_breaks else _plural(blank_breaks, "blank-line break")
    )
    counted = (
        f"{ending:,} of {_plural(len(joined), 'single line break')} {'follows' if ending == 1 else 'follow'} a sentence end or a heading"
    )
    if ending / len(joined) > LINE_MODE_MIN_SHARE:
        return LayoutGuess("line", f"{lines}; {counted}: each line is a paragraph", **figures)
    reason = f"{lines}; only {counted}, the others fall mid-sentence (wrapped text): a blank line separates paragraphs"
    return LayoutGuess("blank", reason, **figures)
