"""The forms that parse the queue page's answers and step 1's paragraph links."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services
from annotation.forms import ParagraphLinksForm, QueueActionForm, form_errors_text
from annotation.models import ParagraphCorrection


def _queue_form(**data) -> QueueActionForm:
    form = QueueActionForm(data)
    form.is_valid()
    return form


def test_a_queue_answer_is_parsed_and_a_bad_one_names_its_field():
    answer = _queue_form(kind="candidate", item_id=" 12 ", label="partial", seconds_spent="3.5")
    assert answer.cleaned_data == {"action": "answer", "kind": "candidate", "item_id": 12, "label": "partial", "seconds_spent": 3.5}
    assert form_errors_text(_queue_form(kind="candidate", item_id="abc", action="skip")) == (
        "item_id: 'abc' is not a queue item id (a whole number)"
    )
    assert form_errors_text(_queue_form(kind="gold", item_id="3", label="aligned", seconds_spent="NaN")).startswith(
        "seconds_spent: nan must be a finite number"
    )
    assert _queue_form(action="undo").is_valid()  # an undo names no item
    assert _queue_form(action="skip", kind="gold", item_id="4", seconds_spent="NaN").is_valid()  # a skip carries no time


def test_paragraph_links_are_pairs_of_positions():
    def parsed(*links: str):
        form = ParagraphLinksForm({"link": list(links)})
        return form.cleaned_data["link"] if form.is_valid() else form_errors_text(form)

    assert parsed("0:0", "1:2") == [(0, 0), (1, 2)]
    assert parsed() == []
    assert parsed("0:1:2") == "a paragraph link must look like complex:simple, got '0:1:2'"
    assert parsed("one:two") == "a paragraph link must look like complex:simple, got 'one:two'"


def test_a_malformed_paragraph_link_is_refused_with_its_value_and_nothing_stored(client, owner, tram_corpus):
    pair = tram_corpus.pairs.get()
    anna = get_user_model().objects.create_user("para", password="p-pass-123")
    project = services.project_create(name="Paragraphs", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=anna, role="annotator")
    services.assignments_distribute(project=project)
    client.force_login(anna)
    url = reverse("annotation:paragraphs_step", args=[project.pk, pair.pk])
    page = client.post(url, {"link": ["0:0", "one:two"]}, follow=True).content.decode()
    assert "Paragraph alignment not saved: a paragraph link must look like complex:simple, got &#x27;one:two&#x27;" in page
    assert not ParagraphCorrection.objects.exists()
