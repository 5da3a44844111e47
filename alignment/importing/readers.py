"""Readers for the four corpus formats. Each turns one file into parsed documents or raises.

* ``text``: one ``.txt`` file per document; a blank line (or each line, with
  ``paragraph_mode="line"``; ``"auto"``: whichever :mod:`~alignment.importing.layout`
  detects in the file) marks a paragraph; id and level come from the file
  name through ``filename_pattern``.
* ``csv``: one column per level, one row per paragraph; an optional ``id``
  column groups rows into articles, otherwise the file name is the article id.
* ``jsonl``: one object per line, ``{id, title, level, text | paragraphs | sentences}``.
* ``presplit``: like ``text`` but one sentence per line, a blank line between paragraphs.

Readers never touch the database: a file either parses completely or raises
:class:`ImportFormatError` naming the file and line, so nothing of it is stored.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from alignment.importing.cleaning import CleaningReport, ImportFormatError, clean_text, decode_bytes, fold_whitespace
from alignment.importing.json_input import JsonInputError, json_loads_bounded
from alignment.importing.layout import LayoutGuess, detect_paragraph_layout
from alignment.importing.patterns import PatternTooSlow, check_pattern_on_names, compile_pattern, match_bounded
from alignment.levels import level_order_check

ImportFormat = Literal["text", "csv", "jsonl", "presplit"]
FORMATS: tuple[ImportFormat, ...] = ("text", "csv", "jsonl", "presplit")
# "auto" detects the mode per file (the Import page's default); the command line offers blank and line.
PARAGRAPH_MODES = ("auto", "blank", "line")
FILE_SUFFIXES: dict[str, tuple[str, ...]] = {
    "text": (".txt",),
    "presplit": (".txt",),
    "csv": (".csv",),
    "jsonl": (".jsonl", ".json"),
}
DEFAULT_FILENAME_PATTERN = r"^(?P<id>.+)-(?P<level>[^-]+)$"
DEFAULT_LEVEL_HEADER_PATTERN = r"(?i)^(advanced|intermediate|elementary|beginner|adv|int|ele|level \w+)$"
# How the user-supplied patterns are named in messages, and the named groups each must have.
PATTERN_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "filename_pattern": ("filename pattern", ("id",)),
    "level_header_pattern": ("level header pattern", ()),
}


@dataclass(frozen=True)
class ImportOptions:
    format: ImportFormat = "text"
    language: str = "en"
    paragraph_mode: Literal["auto", "blank", "line"] = "blank"
    filename_pattern: str = DEFAULT_FILENAME_PATTERN
    drop_level_header: bool = False
    level_header_pattern: str = DEFAULT_LEVEL_HEADER_PATTERN
    csv_id_column: str = "id"
    max_file_bytes: int = 5 * 1024 * 1024
    repair_punctuation: bool = True
    level_order: tuple[str, ...] = ()  # most complex first; levels left out are placed by scheme or readability

    def __post_init__(self) -> None:
        object.__setattr__(self, "level_order", tuple(self.level_order))  # a list when read back from a job's JSON
        try:
            level_order_check(self.level_order)
        except ValueError as exc:
            raise ValueError(f"level_order: {exc}") from None
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
        if self.paragraph_mode not in PARAGRAPH_MODES:
            raise ValueError(f"unknown paragraph mode {self.paragraph_mode!r}; choose one of {', '.join(PARAGRAPH_MODES)}")
        for name, (label, groups) in PATTERN_RULES.items():
            try:
                compile_pattern(getattr(self, name), label=label, required_groups=groups)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None

    def match_pattern(self, name: str, text: str):
        """Match the pattern option ``name`` against ``text`` within the time bound (:class:`PatternTooSlow`)."""
        label, groups = PATTERN_RULES[name]
        return match_bounded(getattr(self, name), text, label=label, required_groups=groups)

    def check_filename_pattern(self, names) -> None:
        """Stop before importing when the file-name pattern is too slow on one of ``names`` (file names)."""
        if self.format in ("text", "presplit"):
            label, groups = PATTERN_RULES["filename_pattern"]
            check_pattern_on_names(self.filename_pattern, (Path(n).stem for n in names), label=label, required_groups=groups)


@dataclass
class ParsedDocument:
    external_id: str
    level: str
    file: str
    line: int
    title: str = ""
    paragraphs: list[str] | None = None  # running text, to be sentence-split
    sentences: list[list[str]] | None = None  # pre-split: sentences per paragraph
    paragraph_mode: str = ""  # text format: the mode its paragraphs were read with ("auto" resolved)
    detected_layout: LayoutGuess | None = None  # text format: the mode its lines suggest, and why
    cleaning: CleaningReport = field(default_factory=CleaningReport)


def read_file(name: str, data: bytes, options: ImportOptions) -> list[ParsedDocument]:
    """Parse one file's bytes. ``name`` is what error messages call the file."""
    if len(data) > options.max_file_bytes:
        raise ImportFormatError(f"file is {len(data):,} bytes, over the limit of {options.max_file_bytes:,} bytes", file=name)
    text, report = decode_bytes(data, file=name)
    text = clean_text(text, report, repair_punctuation=options.repair_punctuation)
    reader = {"text": _read_text, "presplit": _read_presplit, "csv": _read_csv, "jsonl": _read_jsonl}[options.format]
    documents = reader(name, text, options, report)
    if not documents:
        raise ImportFormatError("empty file: no document in it", file=name)
    for document in documents:
        document.cleaning.encoding = report.encoding
        document.cleaning.had_bom = report.had_bom
    # The file-level counts belong to the file; attribute them to its first document only.
    documents[0].cleaning.merge(report)
    return documents


def file_levels(name: str, data: bytes, options: ImportOptions) -> list[str]:
    """The levels a file holds, in the order they first appear; empty when it cannot be read (the import says why).

    The text formats take the level from the file name alone, without decoding the file.
    """
    try:
        if options.format in ("text", "presplit"):
            return [_id_and_level_from_name(name, options)[1]]
        return list(dict.fromkeys(document.level for document in read_file(name, data, options)))
    except ImportFormatError:
        return []


def _id_and_level_from_name(name: str, options: ImportOptions) -> tuple[str, str]:
    stem = Path(name).stem
    try:
        match = options.match_pattern("filename_pattern", stem)
    except PatternTooSlow as exc:
        raise ImportFormatError(str(exc), file=name) from None
    if not match:
        raise ImportFormatError(
            f"file name {stem!r} does not match the pattern {options.filename_pattern!r} (needs an id and a level)",
            file=name,
        )
    groups = match.groupdict()
    level = groups.get("level") or ""
    if not level:
        raise ImportFormatError(f"file name {stem!r} gives no level (pattern group 'level')", file=name)
    return groups["id"].strip(), level.strip()


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Groups of consecutive non-empty lines with the 1-based line number of their first line."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if line:
            if not current:
                start = number
            current.append(line)
        elif current:
            blocks.append((start, current))
            current = []
    if current:
        blocks.append((start, current))
    return blocks


def _drop_header(name: str, blocks: list[tuple[int, list[str]]], options: ImportOptions) -> list[tuple[int, list[str]]]:
    if not (options.drop_level_header and blocks):
        return blocks
    try:
        is_header = options.match_pattern("level_header_pattern", blocks[0][1][0])
    except PatternTooSlow as exc:
        raise ImportFormatError(str(exc), file=name, line=blocks[0][0]) from None
    if is_header:
        first_line, lines = blocks[0]
        rest = lines[1:]
        return ([(first_line + 1, rest)] if rest else []) + blocks[1:]
    return blocks


def _read_text(name: str, text: str, options: ImportOptions, report: CleaningReport) -> list[ParsedDocument]:
    external_id, level = _id_and_level_from_name(name, options)
    detected = detect_paragraph_layout(text)
    mode = detected.paragraph_mode if options.paragraph_mode == "auto" else options.paragraph_mode
    if mode == "line":
        blocks = [(n, [line]) for n, line in enumerate(text.split("\n"), start=1) if line]
    else:
        blocks = _blocks(text)
    blocks = _drop_header(name, blocks, options)
    if not blocks:
        raise ImportFormatError("empty document: no text after cleaning", file=name)
    paragraphs = [" ".join(lines) for _, lines in blocks]
    document = ParsedDocument(
        external_id=external_id, level=level, file=name, line=blocks[0][0], paragraphs=paragraphs,
        paragraph_mode=mode, detected_layout=detected,
    )  # fmt: skip
    return [document]


def _read_presplit(name: str, text: str, options: ImportOptions, report: CleaningReport) -> list[ParsedDocument]:
    external_id, level = _id_and_level_from_name(name, options)
    blocks = _drop_header(name, _blocks(text), options)
    if not blocks:
        raise ImportFormatError("empty document: no sentence lines after cleaning", file=name)
    return [ParsedDocument(external_id=external_id, level=level, file=name, line=blocks[0][0], sentences=[lines for _, lines in blocks])]


def _read_csv(name: str, text: str, options: ImportOptions, report: CleaningReport) -> list[ParsedDocument]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError("empty CSV: no header row", file=name, line=1) from None
    except csv.Error as exc:
        raise ImportFormatError(f"malformed CSV header: {exc}", file=name, line=1) from None
    header = [column.strip() for column in header]
    id_column = header.index(options.csv_id_column) if options.csv_id_column in header else None
    level_columns = [(i, column) for i, column in enumerate(header) if i != id_column and column != "title"]
    if not level_columns or any(not column for _, column in level_columns):
        raise ImportFormatError("the header must name one column per level (an empty column name was found)", file=name, line=1)
    default_id = Path(name).stem
    # article id -> level -> (first line, paragraphs)
    articles: dict[str, dict[str, tuple[int, list[str]]]] = {}
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise ImportFormatError(f"row has {len(row)} fields but the header has {len(header)}", file=name, line=line)
            article_id = row[id_column].strip() if id_column is not None else default_id
            if not article_id:
                raise ImportFormatError("empty article id", file=name, line=line, field=options.csv_id_column)
            levels = articles.setdefault(article_id, {})
            for i, level in level_columns:
                cell = fold_whitespace(row[i])
                if cell:
                    levels.setdefault(level, (line, []))[1].append(cell)
    except csv.Error as exc:
        raise ImportFormatError(f"malformed CSV: {exc}", file=name, line=reader.line_num) from None
    return [
        ParsedDocument(external_id=article_id, level=level, file=name, line=line, paragraphs=paragraphs)
        for article_id, levels in articles.items()
        for level, (line, paragraphs) in levels.items()
    ]


def _read_jsonl(name: str, text: str, options: ImportOptions, report: CleaningReport) -> list[ParsedDocument]:
    documents = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json_loads_bounded(line, allow_nul=True)  # NUL is a control character: cleaning removes and counts it
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=name, line=number) from None
        except JsonInputError as exc:
            field = str(exc.path[0]) if exc.path else None
            detail = "".join(f"[{part!r}]" for part in exc.path[1:])
            raise ImportFormatError(
                exc.reason + (f" (at {field}{detail})" if detail else ""), file=name, line=number, field=field
            ) from None
        if not isinstance(record, dict):
            raise ImportFormatError("each line must be a JSON object", file=name, line=number)
        # JSON escapes (\u0000, \u0019, e\u0301) only become characters now, so clean the strings again.
        record = _clean_json_strings(record, report, options)
        documents.append(_jsonl_document(record, name, number))
    return documents


def _clean_json_strings(value, report: CleaningReport, options: ImportOptions):
    if isinstance(value, str):
        return clean_text(value, report, repair_punctuation=options.repair_punctuation)
    if isinstance(value, list):
        return [_clean_json_strings(item, report, options) for item in value]
    if isinstance(value, dict):
        return {key: _clean_json_strings(item, report, options) for key, item in value.items()}
    return value


def _jsonl_field(record: dict, key: str, name: str, number: int, *, required: bool = True) -> str:
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ImportFormatError("missing or empty", file=name, line=number, field=key)
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ImportFormatError(f"must be a string or number, not {type(value).__name__}", file=name, line=number, field=key)
    return fold_whitespace(str(value))


def _jsonl_document(record: dict, name: str, number: int) -> ParsedDocument:
    document = ParsedDocument(
        external_id=_jsonl_field(record, "id", name, number),
        level=_jsonl_field(record, "level", name, number),
        title=_jsonl_field(record, "title", name, number, required=False),
        file=name,
        line=number,
    )
    given = [key for key in ("text", "paragraphs", "sentences") if record.get(key) is not None]
    if len(given) != 1:
        raise ImportFormatError(
            "needs exactly one of 'text', 'paragraphs' or 'sentences'" + (f" (got {', '.join(given)})" if given else ""),
            file=name,
            line=number,
        )
    key = given[0]
    value = record[key]
    if key == "text":
        if not isinstance(value, str):
            raise ImportFormatError("must be a string", file=name, line=number, field=key)
        document.paragraphs = [" ".join(lines) for _, lines in _blocks(value)]
    elif key == "paragraphs":
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise ImportFormatError("must be a list of strings", file=name, line=number, field=key)
        document.paragraphs = [fold_whitespace(p) for p in value if p.strip()]
    else:
        if isinstance(value, list) and all(isinstance(s, str) for s in value):
            value = [value]  # a flat list is one paragraph
        if not isinstance(value, list) or not all(isinstance(p, list) and all(isinstance(s, str) for s in p) for p in value):
            raise ImportFormatError("must be a list of sentences or a list of paragraphs of sentences", file=name, line=number, field=key)
        document.sentences = [[fold_whitespace(s) for s in p if s.strip()] for p in value]
        document.sentences = [p for p in document.sentences if p]
    if not (document.paragraphs or document.sentences):
        raise ImportFormatError("empty document: no text", file=name, line=number, field=key)
    return document
