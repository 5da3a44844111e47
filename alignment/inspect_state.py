"""The inspection page's state in its URL: run, measure, sort, filters and the open candidate.

Parsed here, not in the view, so a bad value turns into a message that names the parameter
instead of an exception; ``InspectState.query()`` builds the links that keep the state, so a
copied address shows the same page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from alignment.models import CandidateAlignment

SORTS: dict[str, tuple[str, ...]] = {
    "position": ("simple_sentence__index", "complex_sentence__index"),
    "score": ("score",),
    "-score": ("-score",),
    "crf_marginal": ("crf_marginal",),
    "-crf_marginal": ("-crf_marginal",),
    "disagreement": ("disagreement",),
    "-disagreement": ("-disagreement",),
}
LABEL_FILTERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "predicted": (CandidateAlignment.Label.ALIGNED, CandidateAlignment.Label.PARTIAL),
    "aligned": (CandidateAlignment.Label.ALIGNED,),
    "partial": (CandidateAlignment.Label.PARTIAL,),
    "not_aligned": (CandidateAlignment.Label.NOT_ALIGNED,),
}
LABEL_CHOICES = [
    ("all", "all"),
    ("predicted", "predicted (aligned + partial)"),
    ("aligned", "aligned"),
    ("partial", "partial"),
    ("not_aligned", "not aligned"),
]
HUMAN_CHOICES = [  # the human-label overlay's filter
    ("all", "any"),
    ("labelled", "labelled by humans"),
    ("disagrees", "model ≠ humans"),
]
HUMAN_FILTERS = [value for value, _ in HUMAN_CHOICES]


@dataclass(frozen=True)
class InspectState:
    """The view's query parameters after validation; ``query()`` rebuilds links that keep them."""

    run_id: int | None = None
    measure: str = ""
    sort: str = "position"
    label: str = "all"
    min_disagreement: float | None = None
    human: str = "all"
    candidate_id: int | None = None

    def query(self, **changes: Any) -> str:
        """``?run=..&measure=..`` for this state with ``changes`` applied; empty values are left out."""
        state = replace(self, **changes)
        values = {
            "run": state.run_id,
            "measure": state.measure,
            "sort": state.sort,
            "label": state.label,
            "min_disagreement": state.min_disagreement,
            "human": state.human if state.human != "all" else None,
            "candidate": state.candidate_id,
        }
        return "?" + urlencode({key: value for key, value in values.items() if value not in (None, "")})


def inspect_params_parse(query: QueryDict) -> tuple[InspectState, list[str]]:
    """Validated parameters (bad ones fall back to their default) and one message per bad parameter."""
    errors: list[str] = []
    run_id = _int_param(query, "run", errors)
    candidate_id = _int_param(query, "candidate", errors)
    sort = query.get("sort", "") or "position"
    if sort not in SORTS:
        errors.append(f"sort: unknown order {sort!r}; choose one of {', '.join(SORTS)}")
        sort = "position"
    label = query.get("label", "") or "all"
    if label not in LABEL_FILTERS:
        errors.append(f"label: unknown label filter {label!r}; choose one of {', '.join(LABEL_FILTERS)}")
        label = "all"
    human = query.get("human", "") or "all"
    if human not in HUMAN_FILTERS:
        errors.append(f"human: unknown filter {human!r}; choose one of {', '.join(HUMAN_FILTERS)}")
        human = "all"
    min_disagreement = None
    raw = query.get("min_disagreement", "").strip()
    if raw:
        try:
            min_disagreement = float(raw)
            if not math.isfinite(min_disagreement):
                raise ValueError
        except ValueError:
            errors.append(f"min_disagreement: {raw!r} is not a number (use e.g. 0.3)")
            min_disagreement = None
    state = InspectState(
        run_id=run_id,
        measure=query.get("measure", ""),
        sort=sort,
        label=label,
        min_disagreement=min_disagreement,
        human=human,
        candidate_id=candidate_id,
    )
    return state, errors


def _int_param(query: QueryDict, name: str, errors: list[str]) -> int | None:
    raw = query.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        errors.append(f"{name}: {raw!r} is not an id (a whole number)")
        return None
    return int(raw)
