"""Template helpers for the agreement dashboard: look up dict entries and format undefined measures."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if mapping is not None else None


@register.filter
def measure(value) -> str:
    """A kappa/alpha/F1 with three decimals, or an en dash when undefined."""
    return "–" if value is None else f"{value:.3f}"
