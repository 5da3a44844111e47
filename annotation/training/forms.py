from __future__ import annotations

from django import forms

from annotation.training.service import BASES
from models_ml.aligning.train_config import TrainingConfig

_DEFAULTS = TrainingConfig()


class TrainForm(forms.Form):
    base = forms.ChoiceField(
        choices=[(b, {"active": "the active model", "untrained": "the base model (no version of this project)"}[b]) for b in BASES],
        initial="active",
    )
    epochs = forms.IntegerField(min_value=1, max_value=200, initial=_DEFAULTS.epochs)
    lr = forms.FloatField(min_value=1e-6, max_value=10.0, initial=_DEFAULTS.lr, label="Learning rate")
    patience = forms.IntegerField(min_value=1, max_value=50, initial=_DEFAULTS.patience, help_text="epochs without a better dev F1")
    seed = forms.IntegerField(initial=0)
    pair_classifier = forms.BooleanField(
        required=False, label="Also fine-tune the cross-encoder",
        help_text="the MiniLM pair classifier, from the active version's or the bundled one (minutes on CPU)",
    )  # fmt: skip
    pair_classifier_epochs = forms.IntegerField(min_value=1, max_value=20, initial=2, required=False, label="Cross-encoder epochs")

    def __init__(self, *args, base_label: str = "", **kwargs) -> None:
        """``base_label``: the project's base aligner by name (``registry.base_aligner_name``), for the "untrained" choice."""
        super().__init__(*args, **kwargs)
        if base_label:
            self.fields["base"].choices = [("active", "the active model"), ("untrained", f"{base_label} (no version of this project)")]

    def clean_pair_classifier_epochs(self) -> int:
        return self.cleaned_data.get("pair_classifier_epochs") or 2


class PromoteForm(forms.Form):
    force = forms.BooleanField(required=False, help_text="promote even though it does not beat the active model")
    reason = forms.CharField(required=False, max_length=500)
