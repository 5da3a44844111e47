from __future__ import annotations

from django import forms

from webapp.webhooks.models import EVENTS, http_url_validator, public_destination_validator


class WebhookForm(forms.Form):
    url = forms.URLField(
        label="URL", max_length=2000, assume_scheme="https", validators=[http_url_validator, public_destination_validator],
        widget=forms.URLInput(attrs={"placeholder": "https://example.org/hooks/aligner", "size": 50}),
    )  # fmt: skip
    events = forms.MultipleChoiceField(
        choices=[(name, f"{name}: {description}") for name, description in EVENTS.items()],
        widget=forms.CheckboxSelectMultiple, error_messages={"required": "Choose at least one event."},
    )  # fmt: skip
