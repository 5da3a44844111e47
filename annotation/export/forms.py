"""The export form: plain types only; :func:`annotation.export.service.export_options_clean` judges the values."""

from __future__ import annotations

from django import forms

from annotation.export.simplification import METRICS
from annotation.export.writers import FORMATS

FORMAT_NAMES = {
    "tsv": "Wiki-Manual TSV", "jsonl": "JSONL with provenance", "csv": "CSV", "parquet": "Parquet",
    "simplification": "simplification training set (complex → simple)",
}  # fmt: skip


class ExportForm(forms.Form):
    formats = forms.MultipleChoiceField(
        choices=[(name, FORMAT_NAMES[name]) for name in FORMATS], initial=list(FORMATS), widget=forms.CheckboxSelectMultiple
    )
    include_majority = forms.BooleanField(
        required=False, label="Add the unadjudicated majority", help_text="flagged with status 'majority' in every file"
    )
    seed = forms.IntegerField(initial=0, help_text="seeds the document-level split")
    train = forms.FloatField(initial=0.7, label="Train share")
    dev = forms.FloatField(initial=0.15, label="Dev share")
    test = forms.FloatField(initial=0.15, label="Test share")
    drop_identical = forms.BooleanField(required=False, label="Drop identical pairs", help_text="simplification set only")
    score_metric = forms.ChoiceField(
        choices=[("", "no score filter"), *((m, m.upper()) for m in METRICS)], required=False, label="Score filter"
    )
    score_min = forms.FloatField(required=False, label="from", help_text="0-100")
    score_max = forms.FloatField(required=False, label="to", help_text="0-100")

    def options(self) -> dict:
        """The cleaned data in the shape export_job_create takes."""
        data = dict(self.cleaned_data)
        data["fractions"] = {split: data.pop(split) for split in ("train", "dev", "test")}
        return data
