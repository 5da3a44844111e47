"""Alignment groups, the JSON-lines group format and sentence files (models_ml.data.io)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from models_ml.data.io import AlignmentGroup, read_groups_jsonl, read_sentences_file, write_groups_jsonl


def test_groups_jsonl_round_trip_keeps_scores_and_labels(tmp_path: Path) -> None:
    groups = [
        AlignmentGroup(complex=(0, 1), simple=(0,), label="aligned", score=0.91),
        AlignmentGroup(complex=(3,), simple=(2, 4), label="partial"),
    ]
    path = tmp_path / "groups.jsonl"
    write_groups_jsonl(path, groups)
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    assert first_line == '{"complex": [0, 1], "simple": [0], "label": "aligned", "score": 0.91}'
    assert read_groups_jsonl(path) == groups


def test_groups_jsonl_bad_label_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "groups.jsonl"
    path.write_text('{"complex": [0], "simple": [0], "label": "aligned"}\n\n{"complex": [1], "simple": [1], "label": "maybe"}\n')
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}, line 3: label must be one of"):
        read_groups_jsonl(path)


def test_sentences_file_blank_lines_break_paragraphs_and_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_bytes("\ufeff\nFirst one.\r\nSecond one.\r\n\r\n\r\nThird one.\n  \nFourth one.\n\n".encode())
    sentences, paragraphs = read_sentences_file(path)
    assert sentences == ["First one.", "Second one.", "Third one.", "Fourth one."]
    assert paragraphs == [0, 0, 1, 2]


def test_sentences_file_without_sentences_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n \n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: the file holds no sentences"):
        read_sentences_file(path)


def test_sentences_file_with_invalid_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\u00e9 ouvert.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: not valid UTF-8"):
        read_sentences_file(path)


def test_alignment_group_stores_numpy_indices_as_sorted_plain_ints() -> None:
    group = AlignmentGroup(complex=(np.int64(3), np.int64(1)), simple=(2, 2), label="partial")
    assert group == AlignmentGroup(complex=(1, 3), simple=(2,), label="partial")
    assert all(type(i) is int for i in group.complex)


def test_alignment_group_rejects_empty_sides_and_unknown_labels() -> None:
    with pytest.raises(ValueError, match="needs sentences on both sides"):
        AlignmentGroup(complex=(), simple=(0,))
    with pytest.raises(ValueError, match="label must be one of"):
        AlignmentGroup(complex=(0,), simple=(0,), label="identical")
