"""The annotation screen sends an action again when it never heard the answer: the server stores it once.

Also what the screen reads back before it trusts itself (``annotate_state``), that neither it nor the
screen is ever cached, and that a save sent with a token from before a new log-in gets the CSRF
refusal the screen recognises, and goes through with the session probe's token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from alignment.errors import ServiceError
from alignment.models import DocumentPair
from annotation import services
from annotation.client_actions import client_action_unique
from annotation.models import AnnotationProject, ItemEvent, LabelEvent
from tests.annotation.conftest import tram_project

FIRST, SECOND, THIRD = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "Action_id-from-another-client-01"


@dataclass
class Screen:
    """Anna's client on the annotation screen of the tram pair (project "Resend")."""

    client: Client
    project: AnnotationProject
    pair: DocumentPair
    simple: list[int]
    complex_: list[int]

    def url(self, name: str) -> str:
        return reverse(f"annotation:{name}", kwargs={"project_id": self.project.pk, "pair_id": self.pair.pk})

    def label(self, client_id: str, label: str = "aligned", expected: object = "", item: int = 0):
        data = {
            "simple_sentence_id": self.simple[item], "complex_sentence_id": self.complex_[item], "label": label,
            "expected_previous": expected or "", "seconds_spent": "2.5", "client_action_id": client_id,
        }  # fmt: skip
        return self.client.post(self.url("label_save"), data, headers={"accept": "application/json"})

    def undo(self, client_id: str):
        return self.client.post(self.url("label_undo"), {"client_action_id": client_id})

    def item_event(self, client_id: str, kind: str, text: str = ""):
        return self.client.post(self.url("item_event_save"), {"kind": kind, "text": text, "client_action_id": client_id})


@pytest.fixture
def screen(tram_corpus, owner, annotator, client) -> Screen:
    project, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Resend")
    client.force_login(annotator)
    return Screen(client, project, pair, simple, complex_)


def test_a_label_sent_again_is_stored_once_and_answered_with_the_current_label(screen):
    first = screen.label(FIRST)
    assert first.status_code == 200
    event = first.json()["event"]
    again = screen.label(FIRST)  # the answer was lost: the page sends the same body again
    assert again.status_code == 200 and again.json()["event"] == event and again.json()["label"] == "aligned"
    after_reload = screen.label(FIRST, expected=event)  # a new page read the label the lost answer would have shown
    assert after_reload.status_code == 200 and after_reload.json()["event"] == event
    assert LabelEvent.objects.count() == 1
    assert LabelEvent.objects.get().client_action_id == FIRST

    changed = screen.label(SECOND, "partial", expected=event)
    late = screen.label(FIRST)  # a stale resend answers with the label as it is now, and changes nothing
    assert late.status_code == 200
    assert (late.json()["label"], late.json()["event"]) == ("partial", changed.json()["event"])
    assert late.json()["progress"]["labelled"] == 1
    assert LabelEvent.objects.count() == 2


def test_an_undo_sent_again_undoes_once(screen):
    event = screen.label(FIRST).json()["event"]
    screen.label(SECOND, "partial", expected=event)
    undone = screen.undo(THIRD)
    assert undone.status_code == 200 and undone.json()["undone"] and undone.json()["label"] == "aligned"
    again = screen.undo(THIRD)
    assert again.status_code == 200 and again.json()["undone"] and again.json()["label"] == "aligned"
    assert LabelEvent.objects.filter(source=LabelEvent.Source.UNDO).count() == 1
    assert LabelEvent.objects.order_by("-pk").first().new_label == "aligned"  # the second send did not undo the first label too


def test_an_item_event_sent_again_is_stored_once(screen):
    for _ in range(2):
        answer = screen.item_event(FIRST, "comment", "the second sentence is missing")
        assert answer.status_code == 200 and [c["text"] for c in answer.json()["notes"]["comments"]] == ["the second sentence is missing"]
    for _ in range(2):
        answer = screen.item_event(SECOND, "skip")
        assert answer.status_code == 200 and answer.json()["next_url"]
    assert sorted(ItemEvent.objects.values_list("kind", "client_action_id")) == [("comment", FIRST), ("skip", SECOND)]


@pytest.mark.parametrize(
    "client_id",
    ["0123456789abcde", "a" * 65, "0123456789abcdef 0123", "../../0123456789abcdef", "0123456789abcdéf0123", "0123456789abcdef\n"],
    ids=["too-short", "too-long", "space", "path", "not-ascii", "newline"],
)
def test_a_malformed_client_action_id_is_refused_by_every_write_and_nothing_is_stored(screen, client_id):
    for answer in (screen.label(client_id), screen.undo(client_id), screen.item_event(client_id, "flag")):
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("client_action_id: ") and "16 to 64 letters, digits" in answer.json()["error"]
    assert not LabelEvent.objects.exists() and not ItemEvent.objects.exists()


def test_a_client_action_id_reused_for_another_action_is_refused(screen):
    event = screen.label(FIRST).json()["event"]
    for answer in (
        screen.label(FIRST, "partial", expected=event),  # another label
        screen.label(FIRST, item=1),  # another sentence pair
        screen.undo(FIRST),  # another kind of action
    ):
        assert answer.status_code == 400 and "already names another action" in answer.json()["error"]
    screen.item_event(SECOND, "flag")
    assert screen.item_event(SECOND, "unflag").status_code == 400
    assert LabelEvent.objects.count() == 1 and ItemEvent.objects.count() == 1


def test_a_client_action_id_of_another_project_is_refused(screen, annotator, owner, tram_corpus):
    other, pair, simple, complex_ = tram_project(tram_corpus, owner, [annotator], "Resend again")
    screen.label(FIRST)
    with pytest.raises(ServiceError, match="already names another action") as refusal:
        services.label_record(
            project=other, annotator=annotator, pair=pair, simple_sentence_id=simple[0], complex_sentence_id=complex_[0],
            label="aligned", expected_previous=None, client_action_id=FIRST,
        )  # fmt: skip
    assert refusal.value.field == "client_action_id"
    assert LabelEvent.objects.count() == 1


def test_the_unique_constraint_refuses_an_id_that_two_writes_stored_at_once(screen, annotator):
    """The lookup runs under each pair's lock; two pairs' writes with one id can both miss it, and the constraint decides."""
    event = LabelEvent.objects.get(pk=screen.label(FIRST).json()["event"])
    with pytest.raises(ServiceError, match="already names another action"), client_action_unique(FIRST), transaction.atomic():
        LabelEvent.objects.create(
            project=screen.project, pair=screen.pair, annotator=annotator, simple_sentence_id=screen.simple[1],
            complex_sentence_id=screen.complex_[1], new_label="aligned", client_action_id=event.client_action_id,
        )  # fmt: skip
    assert LabelEvent.objects.count() == 1


def test_writes_without_a_client_action_id_are_stored_as_before(screen):
    first = screen.label("")
    assert first.status_code == 200
    assert screen.label("", "partial", expected=first.json()["event"]).status_code == 200
    assert list(LabelEvent.objects.values_list("client_action_id", flat=True)) == ["", ""]


def test_the_state_is_what_the_page_would_show_now_and_neither_is_cached(screen):
    event = screen.label(FIRST).json()["event"]
    screen.item_event(SECOND, "comment", "check the names")
    answer = screen.client.get(screen.url("annotate_state"))
    assert answer.status_code == 200
    state = answer.json()
    assert state["labels"] == {f"{screen.simple[0]}:{screen.complex_[0]}": {"label": "aligned", "event": event}}
    assert state["progress"]["labelled"] == 1 and state["progress"]["total"] == len(screen.simple)
    assert [c["text"] for c in state["notes"]["comments"]] == ["check the names"] and not state["notes"]["flagged"]
    page = screen.client.get(screen.url("annotate_pair"))
    for response in (answer, page):
        assert "no-store" in response["Cache-Control"]  # Back must not bring back labels from the HTTP cache
    assert screen.client.post(screen.url("annotate_state")).status_code == 405


def test_a_save_with_the_token_from_before_a_new_login_is_a_csrf_refusal_and_the_probes_token_works(screen):
    browser = Client(enforce_csrf_checks=True)
    login = browser.get(reverse("login"))
    form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.content.decode()).group(1)
    assert (
        browser.post(reverse("login"), {"username": "anna", "password": "anna-pass-123", "csrfmiddlewaretoken": form_token}).status_code
        == 302
    )
    page = browser.get(screen.url("annotate_pair")).content.decode()
    page_token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    again = browser.get(reverse("login")).content.decode()  # signed in again in another tab: a new CSRF secret
    again_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', again).group(1)
    assert (
        browser.post(reverse("login"), {"username": "anna", "password": "anna-pass-123", "csrfmiddlewaretoken": again_token}).status_code
        == 302
    )

    data = {
        "simple_sentence_id": screen.simple[0],
        "complex_sentence_id": screen.complex_[0],
        "label": "aligned",
        "client_action_id": FIRST,
    }
    stale = browser.post(screen.url("label_save"), data, headers={"x-csrftoken": page_token, "accept": "application/json"})
    assert stale.status_code == 403 and stale.json()["reason"] == "csrf"
    assert not LabelEvent.objects.exists()
    fresh_token = browser.get(reverse("accounts:session")).json()["csrf_token"]
    saved = browser.post(screen.url("label_save"), data, headers={"x-csrftoken": fresh_token, "accept": "application/json"})
    assert saved.status_code == 200 and LabelEvent.objects.count() == 1
