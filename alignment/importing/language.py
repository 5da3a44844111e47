"""A corpus's language, detected from the text of its first documents with py3langid.

The import needs the language before it splits sentences (pysbd's rules and the encoders
depend on it), so a new corpus whose language was not given gets the one its text is in.
py3langid's model ships inside its wheel: nothing is downloaded at run time. Detection reads a
bounded sample, so a 5 MB upload costs the same as a page of text.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from py3langid.langid import MODEL_FILE, LanguageIdentifier

LANGUAGE_DETECT = ""  # the import's "language" left empty: detect it from the text
UNDETERMINED = "und"  # ISO 639-2's "undetermined": what a corpus gets when detection is unsure
LANGUAGE_SAMPLE_CHARS = 20_000
MIN_SAMPLE_LETTERS = 50  # below this, a guess is noise ("Text." reads as Extremaduran)
MIN_CONFIDENCE = 0.95  # half German, half English text scores about 0.9


@dataclass(frozen=True)
class LanguageGuess:
    """The detected ISO 639 code (UNDETERMINED when unsure), the model's probability for it, and a note for the report."""

    code: str
    confidence: float
    note: str


@functools.cache
def _identifier() -> LanguageIdentifier:
    """py3langid's model, loaded once per process from the file inside the wheel (about a second)."""
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.cache
def language_codes() -> frozenset[str]:
    """The ISO 639 codes a corpus may have: py3langid's languages, and UNDETERMINED."""
    return frozenset(code for code in _identifier().labels if code != "zxx") | {UNDETERMINED}  # zxx: "no linguistic content"


def language_sample(texts: Iterable[str], *, limit: int = LANGUAGE_SAMPLE_CHARS) -> str:
    """The start of ``texts`` joined by blank lines, at most ``limit`` characters; stops reading once it has them."""
    parts, size = [], 0
    for text in texts:
        parts.append(text[: limit - size])
        size += len(parts[-1])
        if size >= limit:
            break
    return "\n\n".join(parts)


def language_detect(texts: Iterable[str]) -> LanguageGuess:
    """The language of ``texts`` (read up to LANGUAGE_SAMPLE_CHARS), or UNDETERMINED with the reason when unsure."""
    sample = language_sample(texts)
    letters = sum(character.isalpha() for character in sample)
    if letters < MIN_SAMPLE_LETTERS:
        note = f"the language was not detected: {letters} letters of text are too few to tell; set it on the corpus page"
        return LanguageGuess(UNDETERMINED, 0.0, note)
    code, confidence = _identifier().classify(sample)
    if code not in language_codes() or confidence < MIN_CONFIDENCE:
        note = (
            f"the language was not detected: the text reads most like {code!r}, but only with confidence {_shown(confidence)} "
            f"(mixed or unusual text); set it on the corpus page"
        )
        return LanguageGuess(UNDETERMINED, confidence, note)
    return LanguageGuess(code, confidence, f"language detected from the text: {code!r} (confidence {_shown(confidence)})")


def _shown(confidence: float) -> str:
    """Two decimals, rounded down: a probability of 0.99998 is "0.99", never a certain-looking "1.00"."""
    return f"{math.floor(confidence * 100) / 100:.2f}"
