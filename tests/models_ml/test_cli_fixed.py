"""``python -m models_ml align --fixed KNOWN.jsonl``: known groups are kept, the rest aligned given them; bad input refused by line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from models_ml.__main__ import main
from tests.models_ml.test_cli import COMPLEX_TEXT, SIMPLE_TEXT


@pytest.fixture
def documents(tmp_path: Path) -> tuple[Path, Path]:
    complex_path, simple_path = tmp_path / "complex.txt", tmp_path / "simple.txt"
    complex_path.write_text(COMPLEX_TEXT, encoding="utf-8")
    simple_path.write_text(SIMPLE_TEXT, encoding="utf-8")
    return complex_path, simple_path


def _groups(path: Path) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(tuple(r["complex"]), tuple(r["simple"])) for r in map(json.loads, path.read_text().splitlines())]


def _align(documents, output: Path, *extra: str) -> int:
    complex_path, simple_path = documents
    return main(["align", "--complex", str(complex_path), "--simple", str(simple_path), "--output", str(output), "--device", "cpu", *extra])


def test_known_groups_are_kept_and_the_rest_is_aligned(documents, tmp_path) -> None:
    """Simple 1 and 2 are known to split complex 1; simple 0 is known to be unaligned (against the model's own guess)."""
    plain, known, refitted = tmp_path / "plain.jsonl", tmp_path / "known.jsonl", tmp_path / "refit.jsonl"
    fixed = tmp_path / "known-groups.jsonl"
    fixed.write_text('{"complex": [1], "simple": [1, 2], "label": "aligned"}\n\n{"complex": [], "simple": [0]}\n', encoding="utf-8")
    assert _align(documents, plain) == 0
    assert ((0,), (0,)) in _groups(plain)  # the model links simple 0 to complex 0 on its own
    assert _align(documents, known, "--fixed", str(fixed)) == 0
    groups = _groups(known)
    assert ((1,), (1, 2)) in groups
    assert not any(0 in simple for _, simple in groups)
    assert any(3 in simple for _, simple in groups)  # the unknown sentence is still aligned
    assert _align(documents, refitted, "--fixed", str(fixed), "--refit") == 0
    assert ((1,), (1, 2)) in _groups(refitted) and not any(0 in simple for _, simple in _groups(refitted))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"complex": [0], "simple": [9]}\n', r"line 1: simple sentence\(s\) \[9\] outside 0..3 \(the file has 4\)"),
        ('{"complex": [0], "simple": [0]}\n{"complex": [7], "simple": [1]}\n', r"line 2: complex sentence\(s\) \[7\] outside 0..3"),
        (
            '{"complex": [0], "simple": [0, 1]}\n{"complex": [2], "simple": [1]}\n',
            "line 2: simple sentence 1 is already in the known group of line 1",
        ),
        ('{"complex": [0], "simple": [0]}\nnot json\n', r"line 2: not valid JSON"),
        ('["complex", "simple"]\n', "line 1: expected a group object"),
        ('{"complex": [0], "simple": "1"}\n', "line 1: simple must be a list of sentence indices"),
        ('{"complex": [true], "simple": [0]}\n', "line 1: complex must be a list of sentence indices"),
        ('{"complex": [0], "simple": []}\n', "line 1: a known group needs at least one simple sentence"),
    ],
)
def test_bad_known_groups_get_one_line_naming_the_line_and_no_output(documents, tmp_path, capsys, content, message) -> None:
    fixed, output = tmp_path / "known.jsonl", tmp_path / "out.jsonl"
    fixed.write_text(content, encoding="utf-8")
    assert _align(documents, output, "--fixed", str(fixed)) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and str(fixed) in error
    assert re.search(message, error), error
    assert not output.exists()


def test_refit_without_known_groups_and_a_missing_file_are_refused(documents, tmp_path, capsys) -> None:
    output = tmp_path / "out.jsonl"
    assert _align(documents, output, "--refit") == 2
    assert "--refit needs --fixed" in capsys.readouterr().err
    assert _align(documents, output, "--fixed", str(tmp_path / "absent.jsonl")) == 2
    assert "absent.jsonl: no such file" in capsys.readouterr().err
    assert not output.exists()
