"""Forms for creating projects and managing their members."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from alignment.models import AlignmentRun, Corpus
from annotation.models import AnnotationProject, ProjectMembership


class ProjectCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none())
    suggestion_run = forms.ModelChoiceField(
        queryset=AlignmentRun.objects.none(), required=False,
        help_text="Its candidates are shown to annotators as suggestions. Default: the corpus's latest finished run.",
    )
    overlap = forms.IntegerField(min_value=1, max_value=10, initial=2, help_text="Annotators per document pair.")
    strategy = forms.ChoiceField(choices=AnnotationProject.Strategy.choices, initial=AnnotationProject.Strategy.DOCUMENTS)
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False)

    def __init__(self, *args, corpora, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = corpora
        self.fields["suggestion_run"].queryset = AlignmentRun.objects.filter(
            corpus__in=corpora, status=AlignmentRun.Status.SUCCEEDED
        ).select_related("corpus")
        self.fields["suggestion_run"].label_from_instance = lambda run: f"#{run.pk} · {run.corpus} · {run.primary_measure} · {run.created_at:%Y-%m-%d %H:%M}"

    def clean(self) -> dict:
        data = super().clean()
        run, corpus = data.get("suggestion_run"), data.get("corpus")
        if run is not None and corpus is not None and run.corpus_id != corpus.pk:
            self.add_error("suggestion_run", f"run #{run.pk} aligned another corpus ({run.corpus})")
        return data


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ProjectMembership.Role.choices)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(f"no user called {username!r}")
        return user
