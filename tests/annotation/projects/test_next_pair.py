"""A stream of work that never stops: after login annotators land on My tasks; "done" opens their next open pair."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services
from annotation.projects import worklist
from tests.annotation.conftest import tram_project


def _login(client, username: str, password: str, **extra) -> str:
    answer = client.post(reverse("login") + extra.get("query", ""), {"username": username, "password": password})
    assert answer.status_code == 302, answer.content.decode()[:500]
    location = answer["Location"]
    return client.get(location)["Location"] if location == reverse("accounts:landing") else location


@pytest.mark.parametrize(
    ("roles", "staff", "lands_on"),
    [
        (["annotator"], False, "annotation:task_list"),
        (["annotator", "viewer"], False, "annotation:task_list"),
        (["annotator", "manager"], False, "alignment:corpus_list"),  # a manager keeps Corpora
        (["viewer"], False, "alignment:corpus_list"),
        ([], False, "alignment:corpus_list"),  # no project at all: a researcher
        (["annotator"], True, "alignment:corpus_list"),  # staff manage everywhere
    ],
)
def test_a_login_lands_annotators_on_my_tasks_and_everyone_else_on_corpora(client, tram_corpus, owner, roles, staff, lands_on):
    user = get_user_model().objects.create_user("lee", password="lee-pass-123", is_staff=staff)
    for k, role in enumerate(roles):
        project = services.project_create(name=f"P{k}", corpus=tram_corpus, created_by=owner, overlap=1)
        services.membership_set(project=project, user=user, role=role)
    assert _login(client, "lee", "lee-pass-123") == reverse(lands_on)


def test_a_login_with_next_goes_there_whatever_the_role(client, tram_corpus, owner, annotator):
    tram_project(tram_corpus, owner, [annotator], "Mine")
    assert _login(client, "anna", "anna-pass-123", query="?next=/annotate/projects/") == "/annotate/projects/"


def _done(client, project, pair):
    url = reverse("annotation:assignment_done", kwargs={"project_id": project.pk, "pair_id": pair.pk})
    return client.post(url, headers={"Accept": "application/json"})


def test_done_answers_the_next_open_pair_here_then_in_other_projects_then_my_tasks_with_what_is_done(client, tram_corpus, owner, annotator):
    first, pair, *_ = tram_project(tram_corpus, owner, [annotator], "First")
    second, *_ = tram_project(tram_corpus, owner, [annotator], "Second")
    client.force_login(annotator)
    answer = _done(client, first, pair).json()
    assert answer["done"] is True and answer["completed_at"]
    assert answer["next_url"] == reverse("annotation:annotate_pair", args=[second.pk, pair.pk])  # nothing left in First
    assert worklist.next_open_assignment(first.assignments.get(annotator=annotator)).project == second
    answer = _done(client, second, pair).json()
    assert answer["next_url"] == reverse("annotation:task_list")
    page = client.get(answer["next_url"]).content.decode()
    assert "That was your last open pair: all 2 pairs assigned to you are marked done." in page
    assert _done(client, second, pair).json()["next_url"] == reverse("annotation:task_list")  # done again: still nowhere else to go
