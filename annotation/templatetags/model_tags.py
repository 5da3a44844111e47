"""Template helper for model names stored before the one vocabulary (:mod:`alignment.aligning.model_names`)."""

from __future__ import annotations

from django import template

from alignment.aligning.model_names import stored_model_label as _stored_model_label

register = template.Library()


@register.filter
def stored_model_label(name: str) -> str:
    """A stored model name ("untrained", "default model") in today's words; an empty name stays empty."""
    return _stored_model_label(name) if name else ""
