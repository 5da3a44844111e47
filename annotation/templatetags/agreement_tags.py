"""Template helpers for the agreement and review pages: dict look-ups, undefined measures, label names."""

from __future__ import annotations

from django import template

from annotation.models import LabelEvent

register = template.Library()


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if mapping is not None else None


@register.filter
def measure(value) -> str:
    """A kappa/alpha/F1 with three decimals, or an en dash when undefined."""
    return "–" if value is None else f"{value:.3f}"


@register.filter
def label_name(value: str) -> str:
    """A stored label as people read it: ``not_aligned`` -> "not aligned" (:meth:`LabelEvent.label_name`)."""
    return LabelEvent.label_name(value)
