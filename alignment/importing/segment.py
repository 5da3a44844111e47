"""Building a document's text layout: paragraphs, sentences and their character spans.

``raw_text`` is the paragraphs joined by a blank line; within a pre-split
paragraph the sentences are joined by a newline. Every span indexes into
``raw_text``, so ``raw_text[s.char_start:s.char_end] == s.text`` always holds.

Splitting one document has a time budget (``budget_seconds`` of :func:`layout_from_paragraphs`,
IMPORT_SPLIT_BUDGET_SECONDS in an import). pysbd is thorough but slow on some text; past the
budget, the rest of the document is split by :func:`fallback_sentence_starts` (a sentence ends at
``.``, ``!``, ``?`` or ``…``, closing quotes or brackets after it included, where whitespace and
then a capital letter, a digit or an opening quote follow), which is linear and fast, and the
layout says from which paragraph on (:attr:`DocumentLayout.fallback_from_paragraph`).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache

import pysbd
from pysbd.abbreviation_replacer import AbbreviationReplacer as BaseAbbreviationReplacer
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
    fallback_from_paragraph: int | None = None  # 0-based: split (from somewhere in it on) by the fallback splitter

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


class _AbbreviationSearch:
    """pysbd's search for abbreviations, skipping those that cannot change the text; the result is identical.

    pysbd runs, for every abbreviation of the language that occurs anywhere in the text as a
    substring ("no" in "know"), a search of the whole text and then one substitution over the whole
    text per occurrence: half of all splitting time. Every substitution replaces a "." right after
    the abbreviation, and replacing one never creates another, so an abbreviation never followed by
    "." changes nothing, and a substitution already made for the same spelling changes nothing
    again. Both are skipped. pysbd matches abbreviations ignoring case, where "ſ", "K" (Kelvin),
    "ı" and "İ" equal ASCII letters, hence the folding before the test. Abbreviations that are not
    plain ASCII letters and digits ("e.g", which pysbd reads as a pattern) keep pysbd's path.
    """

    def search_for_abbreviations_in_string(self, text: str) -> str:
        lowered = text.lower()
        # Plain words written before a ".", after whitespace or at the start, case folded as pysbd's
        # re.IGNORECASE folds them (the translated characters; only "İ" changes length when lowered).
        before_period = set(_WORD_BEFORE_PERIOD.findall(text.translate(_ASCII_CASE_FOLDS).lower()))
        prepositive = self.lang.Abbreviation.PREPOSITIVE_ABBREVIATIONS
        for stripped, plain in _abbreviations(self.lang):
            if (plain and stripped not in before_period) or stripped not in lowered:
                continue  # plain and never followed by ".": nothing to replace; or pysbd's own test
            matches = re.findall(rf"(?:^|\s|\r|\n){stripped}", text, flags=re.IGNORECASE)
            if not matches:
                continue
            char_array = re.findall(r"(?<={" + str(re.escape(stripped)) + "} ).{1}", text)
            done: set[str] = set()
            for index, match in enumerate(matches):
                spelling = match.strip()
                if plain and spelling in done:
                    continue  # the same substitution again: a no-op
                text = self.scan_for_replacements(text, match, index, char_array)
                char = char_array[index] if index < len(char_array) else ""
                if not str(char).isupper() or spelling.lower() in prepositive:
                    done.add(spelling)
        return text


@lru_cache(maxsize=32)
def _abbreviations(lang: type) -> tuple[tuple[str, bool], ...]:
    """The language's abbreviations in pysbd's order, each with whether it is plain ASCII letters and digits."""
    stripped = [abbr.strip() for abbr in lang.Abbreviation.ABBREVIATIONS]
    return tuple((abbr, re.fullmatch(r"[a-z0-9]+", abbr) is not None) for abbr in stripped)


_WORD_BEFORE_PERIOD = re.compile(r"(?:^|(?<=\s))([a-z0-9]+)\.")
# The only characters besides ASCII that Python's re, ignoring case, takes for an ASCII letter or digit.
_ASCII_CASE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _with_fast_abbreviations(lang: type) -> type:
    """``lang`` with :class:`_AbbreviationSearch`, where its abbreviation rules are the ones it reproduces."""
    replacer = lang.AbbreviationReplacer
    rules = ("search_for_abbreviations_in_string", "scan_for_replacements", "replace_period_of_abbr")
    if any(getattr(replacer, rule) is not getattr(BaseAbbreviationReplacer, rule) for rule in rules):
        return lang  # a language with its own rules keeps pysbd's search
    fast_replacer = type(replacer.__name__, (_AbbreviationSearch, replacer), {})
    return type(lang.__name__, (lang,), {"AbbreviationReplacer": fast_replacer})


class _Segmenter(pysbd.Segmenter):
    """pysbd's segmenter with a faster abbreviation search, locating its sentences with ``str.find``.

    pysbd finds each sentence's span with a new regular expression (the escaped sentence) searched
    from the start of the text: quadratic in the text, and thousands of one-off patterns evict
    pysbd's own rules from ``re``'s cache of compiled patterns, so the rules are compiled again and
    again (a 200 KB paragraph ran at 17 KB/s). The spans are the same: the first occurrence of the
    sentence, with its trailing whitespace, that ends after the previous one.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.language_module = _with_fast_abbreviations(self.language_module)
        punctuation = "".join(re.escape(p) for p in self.language_module.Punctuations)
        # Where pysbd can end a sentence: its punctuation, a line break, a list item "a)", a dash
        # before a closing quote. A stretch without any of these comes back from pysbd whole.
        self.candidate_boundary = re.compile(rf"[{punctuation}\n\r)]|-[\"'“”]")

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
def _segmenter(language: str) -> _Segmenter:
    code = language if language in pysbd.languages.LANGUAGE_CODES else _DEFAULT_SEGMENTER_LANGUAGE
    return _Segmenter(language=code, clean=False, char_span=True)


def split_sentences(paragraph: str, *, language: str, deadline: float | None = None) -> list[tuple[int, int]]:
    """Sentence spans (start, end) within ``paragraph``, trimmed; together they hold every non-space character.

    pysbd proposes the sentence starts (:func:`_sentence_starts`); a sentence runs to the next start,
    so nothing pysbd leaves out is lost. Then starts that cut a fragment are taken back
    (:func:`_joins_previous`): a piece with no letter or digit (a closing quote on its own), a
    piece that starts with ",", ";" or ":", a cut inside a token after a "." (".com", "www.x.org",
    an e-mail address), a piece opening with a domain name after a "." ("Amazon. co.uk"), and a
    lowercase word after "?" or "!" (a question whose quotes were lost: "Why? she asked."). A list
    number on its own ("1.") joins the sentence after it. Any sentence over ``MAX_SENTENCE_CHARS``
    is cut at the last space within the bound (at the bound when there is none). A paragraph with
    no word character has no sentence. Past ``deadline`` (``time.monotonic()``), the rest of the
    paragraph is split by :func:`fallback_sentence_starts` instead of pysbd.
    """
    return _split(paragraph, language, deadline)[0]


def _split(paragraph: str, language: str, deadline: float | None) -> tuple[list[tuple[int, int]], bool]:
    """:func:`split_sentences`, and whether the fallback splitter did some of it."""
    starts, fell_back = _sentence_starts(paragraph, language, deadline)
    pieces = _merge_fragments(paragraph, list(zip(starts, starts[1:] + [len(paragraph)])))
    spans = []
    for piece_start, piece_end in pieces:
        for start, end in _bounded(paragraph, piece_start, piece_end):
            text = paragraph[start:end]
            start, end = start + (len(text) - len(text.lstrip())), start + len(text.rstrip())
            if end > start and _HAS_WORD.search(paragraph, start, end):
                spans.append((start, end))
    return spans, fell_back


def _sentence_starts(paragraph: str, language: str, deadline: float | None = None) -> tuple[list[int], bool]:
    """Where pysbd starts sentences in ``paragraph`` (always 0 first), window by window; and whether it ran out of time.

    A paragraph up to ``SEGMENT_WINDOW_CHARS`` long goes to pysbd in one call. A longer one is
    segmented window by window: the starts in a window are kept except its last, which the window
    may have cut short, and the next window begins at that last start. The boundaries are pysbd's
    own (it decides them from the text around each one), and the work is linear in the paragraph's
    length. A window in which pysbd finds no boundary is cut at the last space within
    ``MAX_SENTENCE_CHARS``; pysbd is not even asked when the window has no character it could end
    a sentence at (no sentence punctuation, line break, ")" or dash before a quote). Once
    ``deadline`` has passed, the rest goes to :func:`fallback_sentence_starts`.
    """
    segmenter = _segmenter(language)
    starts = [0]
    position = 0
    while position < len(paragraph):
        if deadline is not None and _now() >= deadline:
            starts.extend(position + start for start in fallback_sentence_starts(paragraph[position:]) if start > 0)
            return starts, True
        window_end = min(len(paragraph), position + SEGMENT_WINDOW_CHARS)
        if window_end < len(paragraph) and not segmenter.candidate_boundary.search(paragraph, position, window_end):
            window = [0]
        else:
            window = [piece.start for piece in segmenter.segment(paragraph[position:window_end])]
            window = [start for i, start in enumerate(window) if start > 0 and (i == 0 or start > window[i - 1])]
            window = [0] + window
        if window_end == len(paragraph):
            starts.extend(position + start for start in window[1:])
            break
        if len(window) >= 2:
            starts.extend(position + start for start in window[1:])
            position += window[-1]
        else:  # no boundary in the whole window: force one
            position = _cut_before(paragraph, position, position + MAX_SENTENCE_CHARS)
            starts.append(position)
    return starts, False


def _now() -> float:
    return time.monotonic()


# A sentence end for the fallback splitter: end punctuation, closing quotes or brackets, whitespace.
_FALLBACK_END = re.compile(r"[.!?…]+[\"'”’»)\]]*\s+")
_FALLBACK_OPENING = "\"'“„‘«(["


def fallback_sentence_starts(text: str) -> list[int]:
    """Sentence starts in ``text`` (0 first) by punctuation alone, in linear time: the splitter past the time budget.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or brackets after it)
    where whitespace and then a capital letter, a digit or an opening quote follow. Abbreviations
    before a capitalised word ("Dr. Smith") are split where pysbd would not; nothing is lost.
    """
    starts = [0]
    for end in _FALLBACK_END.finditer(text):
        following = text[end.end() : end.end() + 2]
        first = following[1:2] if following[:1] in _FALLBACK_OPENING else following[:1]
        if first and (first.isupper() or first.isdigit()):
            starts.append(end.end())
    return starts


_HAS_ALNUM = re.compile(r"[^\W_]")
_LIST_NUMBER = re.compile(r"\(?\d{1,3}[.)]")
# A domain name: lowercase labels joined by dots, the last of two letters or more ("co.uk", "example.com").
_DOMAIN_START = re.compile(r"[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b")
_QUESTION_END = re.compile(r"[?!][\"'”’)\]]*\Z")


def _merge_fragments(text: str, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``pieces`` (contiguous spans of ``text``) with the fragments joined to their neighbours."""
    merged: list[tuple[int, int]] = []
    pending_start: int | None = None  # a list number or leading fragment waiting for the next piece
    for start, end in pieces:
        if pending_start is not None:
            start, pending_start = pending_start, None
        body = text[start:end].strip()
        if merged and _joins_previous(text, merged[-1], start, body):
            merged[-1] = (merged[-1][0], end)
        elif _LIST_NUMBER.fullmatch(body) or (not merged and not _HAS_ALNUM.search(body)):
            pending_start = start
        else:
            merged.append((start, end))
    if pending_start is not None:  # nothing came after it
        if merged:
            merged[-1] = (merged[-1][0], pieces[-1][1])
        else:
            merged.append((pending_start, pieces[-1][1]))
    return merged


def _joins_previous(text: str, previous: tuple[int, int], start: int, body: str) -> bool:
    """Whether the piece starting at ``start`` (``body``, trimmed) is no sentence of its own."""
    if not _HAS_ALNUM.search(body) or body[0] in ",;:":
        return True
    before = text[previous[0] : start].rstrip()
    if before.endswith("."):
        cut_inside_token = before == text[previous[0] : start] and not text[start].isspace()
        if (cut_inside_token and (body[0].islower() or body[0].isdigit())) or _DOMAIN_START.match(body):
            return True
    return bool(_QUESTION_END.search(before)) and body[0].islower()


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


def layout_from_paragraphs(paragraphs: list[str], *, language: str, budget_seconds: float | None = None) -> DocumentLayout:
    """Lay out running-text paragraphs, splitting each into sentences with pysbd, within ``budget_seconds`` if given.

    Past the budget the rest is split by the fallback splitter (see the module docstring), and
    ``fallback_from_paragraph`` says where that began.
    """
    layout = DocumentLayout(raw_text="", paragraphs=[])
    parts: list[str] = []
    offset = 0
    deadline = None if budget_seconds is None else _now() + budget_seconds
    for index, paragraph in enumerate(paragraphs):
        if parts:
            offset += len(PARAGRAPH_SEPARATOR)
        spans, fell_back = _split(paragraph, language, deadline)
        if fell_back and layout.fallback_from_paragraph is None:
            layout.fallback_from_paragraph = index
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
