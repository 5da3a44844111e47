"""Forms for creating projects and managing their members."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.urls import reverse

from alignment.models import AlignmentRun, Corpus
from annotation.models import AnnotationProject, ProjectMembership


class ProjectCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none())
    suggestion_run = forms.ModelChoiceField(
        queryset=AlignmentRun.objects.none(),
        required=False,
        error_messages={"invalid_choice": "that is not a finished alignment run of the chosen corpus"},
        help_text="Runs of the chosen corpus. Its candidates are shown to annotators as suggestions. Default: the corpus's latest finished run.",
    )
    overlap = forms.IntegerField(min_value=1, max_value=10, initial=2, help_text="Annotators per document pair.")
    strategy = forms.ChoiceField(choices=AnnotationProject.Strategy.choices, initial=AnnotationProject.Strategy.DOCUMENTS)
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False)

    def __init__(self, *args, corpora, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = corpora
        # Choosing a corpus reloads the run list with that corpus's runs (htmx picks the field out of this page).
        self.fields["corpus"].widget.attrs.update(
            {
                "hx-get": reverse("annotation:project_create"),
                "hx-target": "#field-suggestion_run",
                "hx-select": "#field-suggestion_run",
                "hx-swap": "outerHTML",
            }
        )
        self.fields["suggestion_run"].queryset = AlignmentRun.objects.filter(
            corpus__in=corpora.filter(pk=self._chosen_corpus_id()), status=AlignmentRun.Status.SUCCEEDED
        ).order_by("-created_at")
        self.fields["suggestion_run"].label_from_instance = lambda run: (
            f"#{run.pk} · {run.primary_measure} · {run.created_at:%Y-%m-%d %H:%M}"
        )

    def _chosen_corpus_id(self) -> int | None:
        raw = self.data.get("corpus") if self.is_bound else self.initial.get("corpus")
        return int(raw) if isinstance(raw, (int, str)) and str(raw).isdigit() and len(str(raw)) < 12 else None


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ProjectMembership.Role.choices, initial=ProjectMembership.Role.ANNOTATOR)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(f"no user called {username!r}")
        return user


class InviteForm(forms.Form):
    """A new annotator account: its username (Django's rules) and, to remember who it is, an optional e-mail.

    The username of an annotator of this project who has not chosen a password yet is accepted
    too (``invitee``): the manager gets a new link for them, as when the first one expired.
    """

    username = forms.CharField(max_length=150, validators=[UnicodeUsernameValidator()])
    email = forms.EmailField(required=False, max_length=254)

    def __init__(self, *args, project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.invitee = None

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username__iexact=username).first()
        if user is None:
            return username
        still_invited = (
            not user.has_usable_password()
            and ProjectMembership.objects.filter(project=self.project, user=user, role=ProjectMembership.Role.ANNOTATOR).exists()
        )
        if not still_invited:
            raise forms.ValidationError(f"a user called {username!r} exists already: add them as a member instead")
        self.invitee = user
        return username


class MemberSearchForm(forms.Form):
    """What the member form's username box holds so far (sent as it is typed)."""

    username = forms.CharField(min_length=1, max_length=150, strip=True)
