"""The review page's query: which sentence pair's word diff to show."""

from __future__ import annotations

from django import forms


def _sentence_id(side: str) -> forms.IntegerField:
    message = f"{side}: not a sentence id"
    return forms.IntegerField(required=False, min_value=1, error_messages={"invalid": message, "min_value": message})


class ReviewDiffForm(forms.Form):
    """``?simple=&complex=``: the sentence pair whose word diff the review page shows; both or neither."""

    simple = _sentence_id("simple")
    complex = _sentence_id("complex")

    def clean(self) -> dict:
        data = super().clean()
        if not self.errors and (data.get("simple") is None) != (data.get("complex") is None):
            raise forms.ValidationError("simple and complex: give both sentence ids, or neither")
        return data

    def sentence_ids(self) -> tuple[int, int] | None:
        """(simple, complex) asked for, or None; call after ``is_valid()``."""
        if self.cleaned_data.get("simple") is None:
            return None
        return self.cleaned_data["simple"], self.cleaned_data["complex"]
