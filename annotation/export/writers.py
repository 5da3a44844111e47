"""Streaming writers: one document pair at a time into one file per split and format.

Every writer opens its train / dev / test files up front (a split without pairs still gets
an empty file with its header or schema, so the layout never depends on the data), appends
each pair's rows as they come and closes at the end. Nothing depends on the clock or on the
order of a dict that was not sorted first, so the same project state gives the same bytes:

- ``wiki-manual/<split>.tsv``: Jiang et al.'s Wiki-Manual columns (label, simple id, complex id,
  simple sentence, complex sentence), labels aligned / partialAligned / notAligned, ids
  ``article-level-paragraph-sentence``. A complete pair (verified or imported) gets a row for
  every sentence pair, as the original files do, so the documents can be rebuilt from it;
  other pairs get their labelled rows only.
- ``csv/<split>.csv`` and ``parquet/<split>.parquet``: one row per labelled sentence pair (FLAT_COLUMNS).
- ``jsonl/<split>.jsonl``: the same rows plus full provenance (every annotator's label with the
  suggestions it was made with, the adjudication, the verification, and the scores and model of
  the suggestion run the labels were made with; :mod:`annotation.export.selection`).
- ``simplification/<split>.jsonl``: complex → simple pairs from the aligned groups.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.export.selection import ExportItem, PairExport, SentenceRow
from annotation.export.simplification import SimplificationPair
from models_ml.data.splits import SPLITS

FORMATS = ("tsv", "jsonl", "csv", "parquet", "simplification")
WIKI_LABELS = {"aligned": "aligned", "partial": "partialAligned", "not_aligned": "notAligned"}
FLAT_COLUMNS = (
    ("pair_id", pa.int64()), ("split", pa.string()), ("status", pa.string()), ("label", pa.string()),
    ("complex_article", pa.string()), ("complex_level", pa.string()), ("simple_article", pa.string()),
    ("simple_level", pa.string()), ("simple_id", pa.string()), ("complex_id", pa.string()),
    ("simple_index", pa.int32()), ("complex_index", pa.int32()), ("simple_sentence", pa.string()),
    ("complex_sentence", pa.string()),
)  # fmt: skip
PARQUET_SCHEMA = pa.schema(list(FLAT_COLUMNS))
_FLAT_NAMES = [name for name, _ in FLAT_COLUMNS]
ROW_GROUP_ROWS = 10_000  # rows buffered per Parquet row group: bounds memory, and fixed so files are reproducible

LevelNumber = Callable[[str], int]


def wiki_id(article: str, level: int, row: SentenceRow) -> str:
    """``article-level-paragraph-sentence``; whitespace in the article id would break the TSV, so it becomes ``_``."""
    return f"{'_'.join(article.split())}-{level}-{row.paragraph}-{row.index_in_paragraph}"


def flat_row(exported: PairExport, item: ExportItem, split: str, level_number: LevelNumber) -> dict:
    """The FLAT_COLUMNS of one labelled sentence pair."""
    return {
        "pair_id": exported.pair_id, "split": split, "status": item.status, "label": item.label,
        "complex_article": exported.complex_article, "complex_level": exported.complex_level,
        "simple_article": exported.simple_article, "simple_level": exported.simple_level,
        "simple_id": wiki_id(exported.simple_article, level_number(exported.simple_level), item.simple),
        "complex_id": wiki_id(exported.complex_article, level_number(exported.complex_level), item.complex),
        "simple_index": item.simple.index, "complex_index": item.complex.index,
        "simple_sentence": item.simple.text, "complex_sentence": item.complex.text,
    }  # fmt: skip


def flat_rows(exported: PairExport, split: str, level_number: LevelNumber) -> list[dict]:
    """The pair's :func:`flat_row` rows, computed once and shared by the CSV, JSONL and Parquet writers (read-only)."""
    rows = exported.flat_rows.get(split)
    if rows is None:
        rows = exported.flat_rows[split] = [flat_row(exported, item, split, level_number) for item in exported.items]
    return rows


def _sentence_ids(article: str, level: int, rows: list[SentenceRow]) -> dict[int, str]:
    """Sentence pk -> :func:`wiki_id`, once per sentence rather than once per row it appears in."""
    return {row.pk: wiki_id(article, level, row) for row in rows}


class _SplitWriter:
    """Base: one open text file per split under ``root / folder``."""

    folder = ""
    suffix = ""

    def __init__(self, root: Path, level_number: LevelNumber) -> None:
        self.level_number = level_number
        (root / self.folder).mkdir(parents=True, exist_ok=True)
        self.paths = {split: root / self.folder / f"{split}{self.suffix}" for split in SPLITS}
        self.handles: dict[str, IO[str]] = {split: path.open("w", encoding="utf-8", newline="") for split, path in self.paths.items()}
        for split in SPLITS:
            self.start(split)

    def start(self, split: str) -> None:
        """Write a header, if the format has one."""

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()

    def flat(self, exported: PairExport, split: str) -> list[dict]:
        return flat_rows(exported, split, self.level_number)


class WikiManualWriter(_SplitWriter):
    """Wiki-Manual's TSV; a sentence a spreadsheet would run as a formula is neutralised as in the CSV (:func:`csv_cell`):
    TSV files are opened in spreadsheets too (76 such cells in one DEplain ``dev.tsv``)."""

    folder, suffix = "wiki-manual", ".tsv"

    def write_pair(self, exported: PairExport, split: str) -> int:
        simple_ids = _sentence_ids(exported.simple_article, self.level_number(exported.simple_level), exported.simple_sentences)
        complex_ids = _sentence_ids(exported.complex_article, self.level_number(exported.complex_level), exported.complex_sentences)
        if exported.complete:
            labels = {(item.simple.pk, item.complex.pk): item.label for item in exported.items}
            cells = ((s, c, labels.get((s.pk, c.pk), "not_aligned")) for s in exported.simple_sentences for c in exported.complex_sentences)
        else:
            cells = ((item.simple, item.complex, item.label) for item in exported.items)
        lines = [
            f"{WIKI_LABELS[label]}\t{simple_ids[simple.pk]}\t{complex_ids[complex_.pk]}\t{csv_cell(simple.text)}\t{csv_cell(complex_.text)}\n"
            for simple, complex_, label in cells
        ]
        self.handles[split].write("".join(lines))
        return len(lines)


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|...). OWASP's advice
# for CSV: prefix such a cell with a single quote, which spreadsheets show as text and do not evaluate.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """``value`` safe to open in a spreadsheet: a string starting with a formula trigger gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


class CsvWriter(_SplitWriter):
    """The flat rows as CSV for spreadsheets: text cells that a spreadsheet would run as a formula are neutralised
    (:func:`csv_cell`); JSONL and Parquet keep every text exactly."""

    folder, suffix = "csv", ".csv"

    def start(self, split: str) -> None:
        self.writers = getattr(self, "writers", {})
        self.writers[split] = csv.writer(self.handles[split], lineterminator="\n")
        self.writers[split].writerow(_FLAT_NAMES)

    def write_pair(self, exported: PairExport, split: str) -> int:
        rows = self.flat(exported, split)
        self.writers[split].writerows([csv_cell(row[name]) for name in _FLAT_NAMES] for row in rows)
        return len(rows)


def _json_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class JsonlWriter(_SplitWriter):
    folder, suffix = "jsonl", ".jsonl"

    def write_pair(self, exported: PairExport, split: str) -> int:
        handle = self.handles[split]
        for item, flat in zip(exported.items, self.flat(exported, split), strict=True):
            handle.write(_json_line({
                **flat,
                "simple_sentence_pk": item.simple.pk, "complex_sentence_pk": item.complex.pk,
                "annotations": item.annotations, "labels": item.labels, "adjudication": item.adjudication,
                "verification": exported.verification, "aligner": item.aligner,
            }))  # fmt: skip
        return len(exported.items)


class SimplificationWriter(_SplitWriter):
    folder, suffix = "simplification", ".jsonl"

    def write_groups(self, exported: PairExport, split: str, pairs: list[SimplificationPair]) -> int:
        handle = self.handles[split]
        complex_level = self.level_number(exported.complex_level)
        simple_level = self.level_number(exported.simple_level)
        complex_rows = {row.index: row for row in exported.complex_sentences}
        simple_rows = {row.index: row for row in exported.simple_sentences}
        for pair in pairs:
            handle.write(_json_line({
                "complex": pair.complex, "simple": pair.simple, "pair_id": exported.pair_id, "split": split,
                "label": pair.label, "phenomenon": pair.phenomenon, "identical": pair.identical,
                "bleu": pair.bleu, "gleu": pair.gleu,
                "complex_ids": [wiki_id(exported.complex_article, complex_level, complex_rows[i]) for i in pair.complex_indices],
                "simple_ids": [wiki_id(exported.simple_article, simple_level, simple_rows[i]) for i in pair.simple_indices],
            }))  # fmt: skip
        return len(pairs)


class ParquetSplitWriter:
    """Parquet in row groups of ROW_GROUP_ROWS, with fixed writer settings so two writes are byte-identical."""

    folder = "parquet"

    def __init__(self, root: Path, level_number: LevelNumber) -> None:
        self.level_number = level_number
        (root / self.folder).mkdir(parents=True, exist_ok=True)
        self.paths = {split: root / self.folder / f"{split}.parquet" for split in SPLITS}
        self.writers = {
            split: pq.ParquetWriter(
                path, PARQUET_SCHEMA, compression="zstd", compression_level=3, use_dictionary=True,
                write_statistics=True, version="2.6", data_page_version="1.0",
            )
            for split, path in self.paths.items()
        }  # fmt: skip
        self.buffers: dict[str, list[pa.RecordBatch]] = {split: [] for split in SPLITS}  # Arrow: compact, not Python rows
        self.buffered = dict.fromkeys(SPLITS, 0)

    def write_pair(self, exported: PairExport, split: str) -> int:
        if not exported.items:
            return 0
        rows = flat_rows(exported, split, self.level_number)
        self.buffers[split].append(pa.RecordBatch.from_pylist(rows, schema=PARQUET_SCHEMA))
        self.buffered[split] += len(rows)
        while self.buffered[split] >= ROW_GROUP_ROWS:
            table = pa.Table.from_batches(self.buffers[split], schema=PARQUET_SCHEMA)
            self._write(split, table.slice(0, ROW_GROUP_ROWS))
            rest = table.slice(ROW_GROUP_ROWS).combine_chunks()
            self.buffers[split], self.buffered[split] = rest.to_batches(), rest.num_rows
        return len(rows)

    def _write(self, split: str, table: pa.Table) -> None:
        # one contiguous chunk per column, as a table built from Python lists has: the same bytes whatever the batches were
        self.writers[split].write_table(table.combine_chunks(), row_group_size=ROW_GROUP_ROWS)

    def close(self) -> None:
        for split in SPLITS:
            if self.buffered[split]:
                self._write(split, pa.Table.from_batches(self.buffers[split], schema=PARQUET_SCHEMA))
                self.buffers[split], self.buffered[split] = [], 0
            self.writers[split].close()
