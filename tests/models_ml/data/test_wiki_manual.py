"""The Wiki-Manual TSV reader (models_ml.data.wiki_manual)."""

from __future__ import annotations

from pathlib import Path

import pytest

from models_ml.data.io import AlignmentGroup
from models_ml.data.wiki_manual import read_wiki_manual_tsv


def write_tsv(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    return path


# Complex: paragraph 0 = "C first. C second.", paragraph 1 = "C third."; simple likewise with three sentences.
WIKI_ROWS = [
    ["partialAligned", "My-Doc-0-1-0", "My-Doc-1-1-0", "S third.", "C third.", "0.4"],
    ["aligned", "My-Doc-0-0-1", "My-Doc-1-0-0", "S second.", "C first.", "0.3"],
    ["aligned", "My-Doc-0-0-0", "My-Doc-1-0-0", "S first.", "C first.", "0.5"],
    ["notAligned", "My-Doc-0-0-0", "My-Doc-1-0-1", "S first.", "C second.", "0.0"],
    ["notAligned", "My-Doc-0-1-0", "My-Doc-1-0-1", "S third.", "C second.", "0.0"],
]


def test_wiki_manual_reader_rebuilds_documents_and_groups_a_split(tmp_path: Path) -> None:
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "dev.tsv", WIKI_ROWS))
    assert len(pairs) == 1
    pair = pairs[0]
    assert pair.pair_id == "My-Doc-1|My-Doc-0"
    assert pair.complex_sentences == ["C first.", "C second.", "C third."]
    assert pair.simple_sentences == ["S first.", "S second.", "S third."]
    assert pair.complex_paragraphs == [0, 0, 1]
    assert pair.simple_paragraphs == [0, 0, 1]
    assert pair.groups == [
        AlignmentGroup(complex=(0,), simple=(0, 1), label="aligned"),
        AlignmentGroup(complex=(2,), simple=(2,), label="partial"),
    ]


def test_wiki_manual_component_with_a_partial_link_is_partial(tmp_path: Path) -> None:
    rows = [
        ["aligned", "A-0-0-0", "A-1-0-0", "s0", "c0"],
        ["partialAligned", "A-0-0-1", "A-1-0-0", "s1", "c0"],
        ["aligned", "A-0-0-1", "A-1-0-1", "s1", "c1"],
    ]
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "x.tsv", rows))
    assert pairs[0].groups == [AlignmentGroup(complex=(0, 1), simple=(0, 1), label="partial")]


def test_wiki_manual_rows_of_different_articles_form_separate_pairs(tmp_path: Path) -> None:
    rows = [["aligned", "A-0-0-0", "A-1-0-0", "a", "A"], ["notAligned", "B-0-0-0", "B-1-0-0", "b", "B"]]
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "x.tsv", rows))
    assert [p.pair_id for p in pairs] == ["A-1|A-0", "B-1|B-0"]
    assert pairs[1].groups == []


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        (["aligned", "A-0-0-1", "A-1-0-0", "s"], "expected 5 or 6 tab-separated columns, found 4"),
        (["maybe", "A-0-0-1", "A-1-0-0", "s", "c"], "unknown label 'maybe'"),
        (["aligned", "A-0-x-1", "A-1-0-0", "s", "c"], "malformed sentence id 'A-0-x-1'"),
    ],
)
def test_wiki_manual_malformed_line_names_file_and_line(tmp_path: Path, bad_row: list[str], message: str) -> None:
    path = write_tsv(tmp_path / "bad.tsv", [WIKI_ROWS[0], WIKI_ROWS[1], bad_row])
    with pytest.raises(ValueError) as error:
        read_wiki_manual_tsv(path)
    assert f"{path}, line 3" in str(error.value)
    assert message in str(error.value)
