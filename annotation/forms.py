"""Forms for creating projects and managing their members."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.urls import reverse

from alignment.models import AlignmentRun, Corpus
from annotation.models import AnnotationProject, ProjectMembership
from annotation.services import seconds_spent_parse


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
        self.fields["suggestion_run"].label_from_instance = lambda run: f"#{run.pk} · {run.model_label} · {run.created_at:%Y-%m-%d %H:%M}"

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


def _whole_number(raw: object, field: str, what: str) -> int:
    text = str(raw or "").strip()
    if not text.isdigit():
        raise forms.ValidationError(f"{field}: {text!r} is not {what} (a whole number)")
    return int(text)


class QueueActionForm(forms.Form):
    """A POST of the queue page: ``action`` undo, skip, or (anything else) an answer, for the item
    ``kind``/``item_id``, with the answer's ``label`` and the seconds spent on it.

    Only what the action needs is checked, in the order the page always checked it; the first
    error names its field (``item_id: 'abc' is not a queue item id``). ``kind`` and ``label`` are
    checked by the queue services, which name them too.
    """

    action = forms.CharField(required=False)
    kind = forms.CharField(required=False, strip=False)
    item_id = forms.CharField(required=False)
    label = forms.CharField(required=False, strip=False)
    seconds_spent = forms.CharField(required=False)

    def clean(self) -> dict:
        data = super().clean()
        data["action"] = data.get("action") if data.get("action") in ("undo", "skip") else "answer"
        if data["action"] == "undo":
            return data
        try:
            if data["action"] == "answer":
                data["seconds_spent"] = seconds_spent_parse(data.get("seconds_spent"))
            data["item_id"] = _whole_number(data.get("item_id"), "item_id", "a queue item id")
        except ValueError as error:  # seconds_spent_parse's, which names its field
            raise forms.ValidationError(str(error)) from None
        return data


class ParagraphLinksForm(forms.Form):
    """Step 1's paragraph alignment: every ``link`` value is ``complex:simple``, two paragraph positions."""

    link = forms.Field(required=False, widget=forms.MultipleHiddenInput)

    def clean_link(self) -> list[tuple[int, int]]:
        links = []
        for value in self.cleaned_data["link"] or []:
            parts = str(value).split(":")
            try:
                link = tuple(int(part) for part in parts)
            except ValueError:
                link = ()
            if len(link) != 2:
                raise forms.ValidationError(f"a paragraph link must look like complex:simple, got {value!r}")
            links.append(link)
        return links


def form_errors_text(form: forms.Form) -> str:
    """A bound form's errors as one line for a message: each error's text, in the form's order."""
    return "; ".join(" ".join(errors) for errors in form.errors.values())
