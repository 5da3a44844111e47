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

PARAGRAPH_SEPARATOR = "\n\n"
PRESPLIT_SENTENCE_SEPARATOR = "\n"
_HAS_WORD = re.compile(r"\w")
_DEFAULT_SEGMENTER_LANGUAGE = "en"


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


@lru_cache(maxsize=8)
def _segmenter(language: str) -> pysbd.Segmenter:
    code = language if language in pysbd.languages.LANGUAGE_CODES else _DEFAULT_SEGMENTER_LANGUAGE
    return pysbd.Segmenter(language=code, clean=False, char_span=True)


def split_sentences(paragraph: str, *, language: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) within ``paragraph``, trimmed, skipping pieces with no word character."""
    spans = []
    for piece in _segmenter(language).segment(paragraph):
        text = piece.sent
        start = piece.start + (len(text) - len(text.lstrip()))
        end = piece.start + len(text.rstrip())
        if end > start and _HAS_WORD.search(paragraph, start, end):
            spans.append((start, end))
    return spans


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
