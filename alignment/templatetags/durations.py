"""Short, human durations for job pages: ``35 ms``, ``2.4 s``, ``3 min 5 s``.

A run over a few small pairs spends milliseconds in the measures; one decimal of seconds
would print that as "0.0 s", which reads as "not measured".
"""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """``seconds`` at a precision that never rounds a real, small time to zero; "–" for None."""
    if seconds is None:
        return "–"
    seconds = max(0.0, float(seconds))
    if seconds == 0:
        return "0 s"
    if seconds < 0.001:
        return "< 1 ms"
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"
