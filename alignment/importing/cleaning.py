"""Turning the bytes of an uploaded file into clean text.

Real corpora arrive in mixed encodings, with byte-order marks, non-NFC
characters and stray control characters (OneStopEnglish has all of these).
Each step reports what it changed so the import report can say so.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from charset_normalizer import from_bytes


class ImportFormatError(ValueError):
    """Bad input, with the file and line it was found on."""

    def __init__(self, message: str, *, file: str, line: int | None = None, field: str | None = None) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.reason = message
        where = file if line is None else f"{file}, line {line}"
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


@dataclass
class CleaningReport:
    encoding: str = "utf-8"
    had_bom: bool = False
    control_characters_removed: int = 0
    punctuation_repaired: int = 0

    def merge(self, other: CleaningReport) -> None:
        self.control_characters_removed += other.control_characters_removed
        self.punctuation_repaired += other.punctuation_repaired


# Some files went through a tool that kept only the low byte of UTF-16 code
# units, turning U+2019 into \x19 and so on. These six are unambiguous when
# they occur in running text, so they are restored rather than deleted.
_TRUNCATED_PUNCTUATION = {
    "\x13": "\u2013",  # – en dash
    "\x14": "\u2014",  # — em dash
    "\x18": "\u2018",  # ‘
    "\x19": "\u2019",  # ’
    "\x1c": "\u201c",  # “
    "\x1d": "\u201d",  # ”
}
_TRUNCATED_RE = re.compile("[" + "".join(_TRUNCATED_PUNCTUATION) + "]")
# C0/C1 controls except tab and newline; carriage returns are handled as line breaks.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\ufeff]")
_INLINE_SPACE_RE = re.compile(r"[^\S\n]+")


def decode_bytes(data: bytes, *, file: str) -> tuple[str, CleaningReport]:
    """Decode with BOM sniffing, then UTF-8, then charset detection.

    Raises :class:`ImportFormatError` when no encoding explains the bytes.
    """
    report = CleaningReport()
    if data.startswith(b"\xef\xbb\xbf"):
        report.had_bom = True
        data = data[3:]
    try:
        return data.decode("utf-8"), report
    except UnicodeDecodeError as exc:
        utf8_error = exc
    if b"\x00" in data and not (data.startswith((b"\xff\xfe", b"\xfe\xff"))):
        line = data[: utf8_error.start].count(b"\n") + 1
        raise ImportFormatError("binary content (NUL bytes); this is not a text file", file=file, line=line)
    best = _most_likely_encoding(data)
    if best is None or best.encoding is None:
        line = data[: utf8_error.start].count(b"\n") + 1
        raise ImportFormatError(
            f"cannot decode: not UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}) and no other encoding fits",
            file=file,
            line=line,
        )
    report.encoding = best.encoding
    text = str(best)
    if text.startswith("\ufeff"):
        report.had_bom = True
        text = text[1:]
    return text, report


# On short texts several single-byte code pages explain the bytes equally well
# (cp1250, cp1252, cp1257, even cp775 differ only in a few letters). Among the
# least chaotic candidates, Windows-1252, by far the commonest legacy encoding
# of Western text, wins the tie.
PREFERRED_LEGACY_ENCODINGS = ("cp1252", "latin_1")


def _most_likely_encoding(data: bytes):
    matches = list(from_bytes(data))
    if not matches:
        return None
    least_chaos = min(m.chaos for m in matches)
    calmest = [m for m in matches if m.chaos == least_chaos]
    for preferred in PREFERRED_LEGACY_ENCODINGS:
        for match in calmest:
            if match.encoding == preferred:
                return match
    return max(calmest, key=lambda m: m.coherence)


def clean_text(text: str, report: CleaningReport, *, repair_punctuation: bool = True) -> str:
    """NFC-normalise, unify line breaks, repair/remove control characters and fold inline whitespace.

    Line breaks are kept (they carry paragraph structure); runs of other
    whitespace become one space and lines are stripped.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if repair_punctuation:
        text, repaired = _TRUNCATED_RE.subn(lambda m: _TRUNCATED_PUNCTUATION[m.group()], text)
        report.punctuation_repaired += repaired
    text, removed = _CONTROL_RE.subn("", text)
    report.control_characters_removed += removed
    text = unicodedata.normalize("NFC", text)
    return "\n".join(_INLINE_SPACE_RE.sub(" ", line).strip() for line in text.split("\n"))


def fold_whitespace(text: str) -> str:
    return " ".join(text.split())
