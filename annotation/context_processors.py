"""Template context for every page: whether the page shows a project's figures from before its last change."""

from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpRequest

from annotation.selectors import figures_served_as_of


def figures_age(request: HttpRequest) -> dict[str, object]:
    """``figures_as_of``: when the oldest figures the page shows from before the project's last change were counted."""
    served = figures_served_as_of()
    return {"figures_as_of": datetime.fromtimestamp(served, tz=UTC)} if served is not None else {}
