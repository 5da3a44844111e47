"""Building a document's text layout: paragraphs, sentences and their character spans.

``raw_text`` is the paragraphs joined by a blank line; within a pre-split
paragraph the sentences are joined by a newline. Every span indexes into
``raw_text``, so ``raw_text[s.char_start:s.char_end] == s.text`` always holds.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

import pysbd
from pysbd.utils import TextSpan

PARAGRAPH_SEPARATOR = "\n\n"
PRESPLIT_SENTENCE_SEPARATOR = "\n"
_HAS_WORD = re.compile(r"\w")
_DEFAULT_SEGMENTER_LANGUAGE = "en"
# pysbd's time grows faster than linearly with its input (200 KB in one call took 13 s), so a long
# paragraph is segmented through a sliding window of this many characters; see split_sentences.
SEGMENT_WINDOW_CHARS = 2000
# A "sentence" longer than this (a paragraph without sentence punctuation) is cut at spaces. The
# sentence encoder reads about 256 word pieces, roughly 1,000 characters, so nothing is lost to it.
MAX_SENTENCE_CHARS = 1000


@dataclass(frozen=True)
class SentenceLayout:
    text: str
    char_start: int
    char_end: int


@dataclass
class ParagraphLayout:
    char_start: int
    char_end: int
    sentences: list[SentenceLayout] = field(default_factory=list)


@dataclass
class DocumentLayout:
    raw_text: str
    paragraphs: list[ParagraphLayout]

    @property
    def sentence_count(self) -> int:
        return sum(len(p.sentences) for p in self.paragraphs)

    def text_hash(self) -> str:
        """Hash of the text *and* its structure: the same words split differently are different content."""
        structure = [[s.text for s in p.sentences] for p in self.paragraphs]
        return hashlib.sha256(json.dumps(structure, ensure_ascii=False).encode()).hexdigest()

    def content_hash(self, *, external_id: str, level: str) -> str:
        """Identity of a stored document: which article and level, with exactly this text and structure."""
        return hashlib.sha256(json.dumps([external_id, level, self.text_hash()]).encode()).hexdigest()


class _Segmenter(pysbd.Segmenter):
    """pysbd's segmenter, locating its sentences in the text with ``str.find``.

    pysbd finds each sentence's span with a new regular expression (the escaped sentence) searched
    from the start of the text: quadratic in the text, and thousands of one-off patterns evict
    pysbd's own rules from ``re``'s cache of compiled patterns, so the rules are compiled again and
    again (a 200 KB paragraph ran at 17 KB/s). The spans are the same: the first occurrence of the
    sentence, with its trailing whitespace, that ends after the previous one.
    """

    def sentences_with_char_spans(self, sentences: list[str]) -> list[TextSpan]:
        text = self.original_text
        spans = []
        prior_end = 0
        for sentence in sentences:
            # An occurrence starting earlier cannot end after prior_end: text[prior_end] is not whitespace.
            position = max(0, prior_end - len(sentence))
            while (start := text.find(sentence, position)) >= 0:
                end = start + len(sentence)
                while end < len(text) and text[end].isspace():
                    end += 1
                if end > prior_end:
                    spans.append(TextSpan(text[start:end], start, end))
                    prior_end = end
                    break
                position = start + 1
        return spans


@lru_cache(maxsize=8)
def _segmenter(language: str) -> pysbd.Segmenter:
    code = language if language in pysbd.languages.LANGUAGE_CODES else _DEFAULT_SEGMENTER_LANGUAGE
    return _Segmenter(language=code, clean=False, char_span=True)


def split_sentences(paragraph: str, *, language: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) within ``paragraph``, trimmed, skipping pieces with no word character.

    A paragraph up to ``SEGMENT_WINDOW_CHARS`` long goes to pysbd in one call. A longer one is
    segmented window by window: the sentences of a window are kept except its last, which the window
    may have cut short, and the next window starts where that last sentence starts. The boundaries
    are pysbd's own (it decides them from the text around each one), and the work is linear in the
    paragraph's length. A window in which pysbd finds no boundary at all, and any sentence over
    ``MAX_SENTENCE_CHARS``, is cut at the last space within the bound (at the bound when there is
    none). No character is dropped other than the whitespace between sentences.
    """
    pieces: list[tuple[int, int]] = []
    position = 0
    while position < len(paragraph):
        window_end = min(len(paragraph), position + SEGMENT_WINDOW_CHARS)
        window = _pysbd_pieces(paragraph[position:window_end], language)
        if window_end == len(paragraph):
            pieces.extend((position + start, position + end) for start, end in window)
            break
        if len(window) >= 2 and window[-1][0] > 0:
            pieces.extend((position + start, position + end) for start, end in window[:-1])
            position += window[-1][0]
        else:  # no boundary in the whole window: force one
            cut = _cut_before(paragraph, position, position + MAX_SENTENCE_CHARS)
            pieces.append((position, cut))
            position = cut
    spans = []
    for piece_start, piece_end in pieces:
        for start, end in _bounded(paragraph, piece_start, piece_end):
            text = paragraph[start:end]
            start, end = start + (len(text) - len(text.lstrip())), start + len(text.rstrip())
            if end > start and _HAS_WORD.search(paragraph, start, end):
                spans.append((start, end))
    return spans


def _pysbd_pieces(text: str, language: str) -> list[tuple[int, int]]:
    return [(piece.start, piece.start + len(piece.sent)) for piece in _segmenter(language).segment(text)]


def _cut_before(text: str, start: int, limit: int) -> int:
    """Just after the last whitespace in ``text[start:limit]`` (past its first character), else ``limit``."""
    space = max(text.rfind(" ", start + 1, limit), text.rfind("\n", start + 1, limit))
    return space + 1 if space > start else limit


def _bounded(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` cut into pieces of at most ``MAX_SENTENCE_CHARS`` (after trimming) at spaces."""
    parts = []
    while end - start > MAX_SENTENCE_CHARS and len(text[start:end].strip()) > MAX_SENTENCE_CHARS:
        start += len(text[start:end]) - len(text[start:end].lstrip())
        cut = _cut_before(text, start, start + MAX_SENTENCE_CHARS)
        parts.append((start, cut))
        start = cut
    parts.append((start, end))
    return parts


def layout_from_paragraphs(paragraphs: list[str], *, language: str) -> DocumentLayout:
    """Lay out running-text paragraphs, splitting each into sentences with pysbd."""
    layout = DocumentLayout(raw_text="", paragraphs=[])
    parts: list[str] = []
    offset = 0
    for paragraph in paragraphs:
        if parts:
            offset += len(PARAGRAPH_SEPARATOR)
        spans = split_sentences(paragraph, language=language)
        para = ParagraphLayout(char_start=offset, char_end=offset + len(paragraph))
        para.sentences = [SentenceLayout(paragraph[s:e], offset + s, offset + e) for s, e in spans]
        layout.paragraphs.append(para)
        parts.append(paragraph)
        offset += len(paragraph)
    layout.raw_text = PARAGRAPH_SEPARATOR.join(parts)
    return layout


def layout_from_sentences(paragraphs: list[list[str]]) -> DocumentLayout:
    """Lay out pre-split paragraphs: each given sentence is kept as one sentence."""
    layout = DocumentLayout(raw_text="", paragraphs=[])
    parts: list[str] = []
    offset = 0
    for sentences in paragraphs:
        if parts:
            offset += len(PARAGRAPH_SEPARATOR)
        para = ParagraphLayout(char_start=offset, char_end=offset)
        cursor = offset
        for i, sentence in enumerate(sentences):
            if i:
                cursor += len(PRESPLIT_SENTENCE_SEPARATOR)
            para.sentences.append(SentenceLayout(sentence, cursor, cursor + len(sentence)))
            cursor += len(sentence)
        para.char_end = cursor
        text = PRESPLIT_SENTENCE_SEPARATOR.join(sentences)
        layout.paragraphs.append(para)
        parts.append(text)
        offset += len(text)
    layout.raw_text = PARAGRAPH_SEPARATOR.join(parts)
    return layout
