"""alignment.errors: the one mapping of a service's refusal to HTTP, used by pages and the API alike."""

from __future__ import annotations

import pytest
from django import forms
from django.urls import reverse

from alignment.errors import ErrorAnswer, ServiceError, error_answer, form_error
from annotation.services import LabelConflict
from webapp.api.errors import api_error


def test_each_refusal_gets_its_status_and_a_typed_error_its_field():
    assert error_answer(ServiceError("language 'English' is not an ISO 639 code", field="language")) == ErrorAnswer(
        400, "language 'English' is not an ISO 639 code", "language"
    )
    assert error_answer(ValueError("overlap must be at least 1")) == ErrorAnswer(400, "overlap must be at least 1", None)
    assert error_answer(PermissionError("anna is not assigned")) == ErrorAnswer(403, "anna is not assigned", None)
    assert error_answer(LabelConflict("changed in another tab", None)) == ErrorAnswer(409, "changed in another tab", None)
    with pytest.raises(KeyError):  # not a refusal: a bug, raised again rather than shown as bad input
        error_answer(KeyError("oops"))


def test_the_api_answers_a_refusal_under_its_field_or_as_non_field_errors():
    assert api_error(ServiceError("a forced promotion needs a reason", field="reason")).detail == {
        "reason": ["a forced promotion needs a reason"]
    }
    assert api_error(ValueError("no annotators")).detail == {"non_field_errors": ["no annotators"]}
    assert api_error(PermissionError("managers only")).status_code == 403
    assert api_error(LabelConflict("changed", None)).status_code == 409


class _NameForm(forms.Form):
    name = forms.CharField()


def test_a_form_shows_a_refusal_on_the_field_it_names_else_above_the_form():
    form = _NameForm({"name": "Trams"})
    assert form.is_valid()
    form_error(form, ServiceError("a project called 'Trams' exists already", field="name"))
    form_error(form, ServiceError("about a field the form does not have", field="corpus_size"))
    assert form.errors == {"name": ["a project called 'Trams' exists already"], "__all__": ["about a field the form does not have"]}


def test_the_project_form_shows_a_taken_name_next_to_the_name_field(client, owner, tram_corpus):
    from annotation import services

    services.project_create(name="Trams gold", corpus=tram_corpus, created_by=owner, overlap=1)
    client.force_login(owner)
    response = client.post(
        reverse("annotation:project_create"), {"name": "Trams gold", "corpus": tram_corpus.pk, "overlap": 1, "strategy": "documents"}
    )
    assert response.context["form"].errors == {"name": ["a project called 'Trams gold' exists already"]}
