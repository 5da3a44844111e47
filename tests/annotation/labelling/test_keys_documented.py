"""The annotator's guide lists, view by view, exactly the keys the key table binds, in the table's words."""

from __future__ import annotations

import re
from pathlib import Path

from annotation.labelling import keys

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "annotating.md"
VIEW_TITLES = {**dict(keys.SCREEN_VIEWS), keys.QUEUE: "Queue"}


def documented_rows(guide: str) -> dict[str, list[dict[str, object]]]:
    """Heading -> the rows of its table under the guide's "## Keys", shaped as :func:`keys.help_rows` gives them."""
    section = guide.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    tables: dict[str, list[dict[str, object]]] = {}
    title = None
    for line in section.splitlines():
        if line.startswith("### "):
            title = line[4:].strip()
            tables[title] = []
        elif line.startswith("| `") and title is not None:
            key_cell, text = (cell.strip() for cell in line.strip().strip("|").split(" | ", 1))
            tables[title].append({"keys": re.findall(r"`([^`]+)`", key_cell), "text": text})
    return tables


def bound_names(view: str) -> set[str]:
    """The keys bound in a view, as the help dialog prints them (Esc, Enter)."""
    table = keys.QUEUE_KEYS if view == keys.QUEUE else keys.SCREEN_KEYS
    return {keys.KEY_NAMES.get(key, key) for key in keys.keymap(table)[view]}


def key_problems(guide: str) -> list[str]:
    """What the guide's key tables get wrong against keys.py: headings, rows, and keys missing or extra per view."""
    tables = documented_rows(guide)
    if list(tables) != list(VIEW_TITLES.values()):
        return [f"headings {list(tables)}, expected {list(VIEW_TITLES.values())}"]
    problems = []
    for view, title in VIEW_TITLES.items():
        rows = keys.QUEUE_KEYS if view == keys.QUEUE else keys.SCREEN_KEYS
        if tables[title] != keys.help_rows(rows, view):
            problems.append(f"### {title}: rows differ from keys.help_rows")
    for view in (keys.FOCUS, keys.ALIGNMENT, keys.QUEUE):
        titles = [VIEW_TITLES[view]] + ([VIEW_TITLES[keys.BOTH]] if view != keys.QUEUE else [])
        documented = {key for title in titles for row in tables[title] for key in row["keys"]}
        if missing := bound_names(view) - documented:
            problems.append(f"{view} view: bound, not documented: {sorted(missing)}")
        if extra := documented - bound_names(view):
            problems.append(f"{view} view: documented, not bound: {sorted(extra)}")
    return problems


def test_the_guide_lists_exactly_the_bound_keys_of_each_view_in_the_key_tables_words():
    assert key_problems(GUIDE.read_text(encoding="utf-8")) == []


def test_a_key_left_out_of_the_guide_or_one_it_adds_is_reported():
    guide = GUIDE.read_text(encoding="utf-8")
    missing = guide.replace("| `x` | mark the cursor sentence unaligned |\n", "")
    assert key_problems(missing) == ["### Alignment view: rows differ from keys.help_rows", "alignment view: bound, not documented: ['x']"]
    extra = guide.replace("| `g` | jump list", "| `g` / `G` | jump list")
    assert key_problems(extra) == ["### Focus view: rows differ from keys.help_rows", "focus view: documented, not bound: ['G']"]
    both = guide.replace("| `i` | show / hide the project's guidelines |\n", "", 1)
    assert "focus view: bound, not documented: ['i']" in key_problems(both)
    assert "alignment view: bound, not documented: ['i']" in key_problems(both)
