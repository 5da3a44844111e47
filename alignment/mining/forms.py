from __future__ import annotations

from django import forms

from alignment.models import Corpus


class MiningJobForm(forms.Form):
    """LHA settings; defaults are models_ml.mining.lha.LHAConfig's (dense) or alignment.mining.lha_service's (hybrid)."""

    target_corpus = forms.ModelChoiceField(
        queryset=Corpus.objects.none(), help_text="the corpus in the other style",
        error_messages={"invalid_choice": "corpus %(value)s is not one you may mine towards: give another corpus you may see"},
    )  # fmt: skip
    retrieval = forms.ChoiceField(
        choices=[("", "by language"), ("dense", "dense (sentence vectors)"), ("hybrid", "hybrid (3-grams + sentence vectors)")],
        required=False, help_text="by the language: hybrid for German, dense otherwise",
    )  # fmt: skip
    k_documents = forms.IntegerField(min_value=1, max_value=50, initial=5, label="K documents")
    theta_d = forms.FloatField(min_value=-1.0, max_value=1.0, required=False, label="θd (document score)")
    k_sentences = forms.IntegerField(min_value=1, max_value=50, initial=5, label="K sentences")
    theta_s = forms.FloatField(min_value=-1.0, max_value=1.0, required=False, label="θs (sentence score)")
    min_overlap = forms.FloatField(min_value=0.0, max_value=1.0, required=False, initial=0.4, help_text="empty: no overlap filter")
    max_length_ratio = forms.FloatField(min_value=0.01, required=False, initial=1.5, help_text="empty: no length filter")
    min_levenshtein = forms.FloatField(
        min_value=0.0, max_value=1.0, required=False, initial=0.2, label="Drop near-copies below",
        help_text="a pair whose texts differ by less than this normalised edit distance (case aside) is dropped, as MUSS "
        "does; empty: keep copies",
    )  # fmt: skip
    language = forms.ChoiceField(choices=[("en", "English"), ("de", "German")], initial="en")

    def __init__(self, *args, targets=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        from alignment.mining.lha_service import LHA_HYBRID_THETA_D, LHA_HYBRID_THETA_S
        from models_ml.mining.lha import LHAConfig

        self.fields["target_corpus"].queryset = targets if targets is not None else Corpus.objects.none()
        dense = LHAConfig()
        for name, hybrid in (("theta_d", LHA_HYBRID_THETA_D), ("theta_s", LHA_HYBRID_THETA_S)):
            self.fields[name].help_text = f"empty: {getattr(dense, name)} for dense, {hybrid} for hybrid retrieval"


class MussJobForm(forms.Form):
    """MUSS settings; defaults are models_ml.mining.muss.MussConfig's."""

    retrieval = forms.ChoiceField(
        choices=[("", "dense (the default)"), ("dense", "dense (encoder)"), ("hybrid", "hybrid (3-grams + encoder)")],
        required=False, help_text="the encoder follows the corpus's language: MiniLM for English, USE multilingual otherwise",
    )  # fmt: skip
    k = forms.IntegerField(min_value=1, max_value=50, initial=8, label="K neighbours")
    max_distance = forms.FloatField(
        min_value=0.0, max_value=2.0, required=False, label="Max distance (1 − score)",
        help_text="empty: 0.25 for dense, 0.6 for hybrid retrieval",
    )  # fmt: skip
    min_margin = forms.FloatField(min_value=0.0, initial=1.06, label="Min ratio margin")
    language = forms.ChoiceField(choices=[("en", "English"), ("de", "German")], initial="en")
