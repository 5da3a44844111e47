"""House rules on the code's shape (CONTRIBUTING.md): no Python or JavaScript file over 450 lines, and no
function over 60 lines unless its docstring says why ("Long because …", "Over 60 lines because …")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("alignment", "annotation", "models_ml", "webapp", "bench", "scripts", "tests")
SCRIPT_FOLDER = ROOT / "static" / "js"  # the screens' own scripts (htmx itself comes with django-htmx)
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
REASONS = ("long because", "over 60 lines", "longer than 60 lines")


def python_files() -> list[Path]:
    return sorted(
        path
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "migrations" not in path.parts and "__pycache__" not in path.parts
    )


def script_files() -> list[Path]:
    return sorted(SCRIPT_FOLDER.rglob("*.js"))


def files_over_the_limit(paths: list[Path]) -> dict[str, int]:
    return {str(path.relative_to(ROOT)): n for path in paths if (n := path.read_text().count("\n")) > MAX_FILE_LINES}


def test_the_checks_see_the_code() -> None:
    assert len(python_files()) > 100
    assert {path.name for path in script_files()} >= {"annotate.js", "app.js"}


def test_no_python_file_is_over_450_lines() -> None:
    too_long = files_over_the_limit(python_files())
    assert not too_long, f"files over {MAX_FILE_LINES} lines (split them along a seam): {too_long}"


def test_no_javascript_file_is_over_450_lines() -> None:
    too_long = files_over_the_limit(script_files())
    assert not too_long, f"scripts over {MAX_FILE_LINES} lines (split them by concern, as annotate*.js are): {too_long}"


def test_no_function_is_over_60_lines_without_a_reason_in_its_docstring() -> None:
    unexplained = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = node.end_lineno - node.lineno + 1
            docstring = (ast.get_docstring(node) or "").lower()
            if length > MAX_FUNCTION_LINES and not any(reason in docstring for reason in REASONS):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not unexplained, "functions over 60 lines with no reason in their docstring: " + "; ".join(unexplained)
