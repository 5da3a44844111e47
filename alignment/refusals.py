"""Wording shared by the services that refuse a change because something else refers to it (a flip, a sentence edit)."""

from __future__ import annotations

NAMED = 5  # items (pairs, projects, runs) named in a refusal; the rest are counted


def listed(items: list) -> str:
    """``1, 2, 3, 4, 5 and 2 more``."""
    shown = ", ".join(str(item) for item in items[:NAMED])
    return shown + (f" and {len(items) - NAMED} more" if len(items) > NAMED else "")


def in_projects(rows, model) -> str:
    """`` in project 'P'`` when the rows belong to projects (a ``project`` field), else ""."""
    if "project" not in {field.name for field in model._meta.get_fields()}:
        return ""
    names = sorted(set(rows.values_list("project__name", flat=True)))
    return f" in project{'s' if len(names) > 1 else ''} {listed([repr(name) for name in names])}"
