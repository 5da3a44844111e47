"""Choice fields whose OpenAPI enum has an explicit component name.

drf-spectacular names enums after the field (``label``, ``new_label``, ...); the same
choice set under two names, or two sets under one name, makes it guess and warn. Naming
them here keeps ``manage.py spectacular --validate --fail-on-warn`` clean without global
``ENUM_NAME_OVERRIDES`` and gives clients stable type names.
"""

from __future__ import annotations

from collections.abc import Sequence

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

_FIELD_CLASSES: dict[str, type[serializers.ChoiceField]] = {}


def enum_field(component: str, choices: Sequence[tuple[str, str]], **kwargs) -> serializers.ChoiceField:
    """A ChoiceField documented as the enum component ``component`` (one class per component: DRF copies
    fields by re-instantiating their class, so the schema override has to live on the class)."""
    field_class = _FIELD_CLASSES.get(component)
    if field_class is None:
        schema = {
            "type": "string",
            "enum": [value for value, _ in choices],
            "description": "\n".join(f"* `{value}` - {label}" for value, label in choices),
        }
        field_class = extend_schema_field(schema, component_name=component)(
            type(f"{component}Field", (serializers.ChoiceField,), {"__doc__": f"Choice field of the {component} enum."})
        )
        _FIELD_CLASSES[component] = field_class
    return field_class(choices=list(choices), **kwargs)
