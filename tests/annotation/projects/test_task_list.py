"""My tasks: every pair assigned to me, across projects, by state (not started, in progress, done, adjudicated)."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import services
from annotation.projects import worklist
from tests.annotation.conftest import label_now, tram_project


def _rows(client, **params) -> list[tuple[str, str]]:
    page = client.get(reverse("annotation:task_list"), params).content.decode()
    return re.findall(
        r'<tr class="task-[\w-]+">\s*<td><a [^>]+>([^<]+)</a></td>.*?<span class="status state-[\w-]+">([^<]+)</span>', page, re.S
    )


def test_tasks_move_from_not_started_to_adjudicated_and_filter_by_state_and_project(client, tram_corpus, owner, annotator):
    ben = get_user_model().objects.create_user("ben", password="b-pass-123")
    names = ["Fresh", "Started", "Finished", "Reviewed"]
    projects = {name: tram_project(tram_corpus, owner, [annotator, ben], name) for name in names}
    for name in ("Started", "Finished", "Reviewed"):
        project, pair, simple, complex_ = projects[name]
        label_now(project, annotator, pair, simple[0], complex_[0])
    project, pair, *_ = projects["Finished"]
    services.assignment_complete(project=project, annotator=annotator, pair=pair)
    project, pair, simple, complex_ = projects["Reviewed"]
    services.adjudicate(
        project=project,
        reviewer=owner,
        pair=pair,
        simple_sentence_id=simple[0],
        complex_sentence_id=complex_[0],
        label="partial",
        expected_previous=None,
    )

    states = {task.assignment.project.name: (task.state, task.labelled, task.total) for task in worklist.tasks_for(annotator)}
    assert states == {
        "Fresh": ("not started", 0, 5),
        "Started": ("in progress", 1, 5),
        "Finished": ("done", 1, 5),
        "Reviewed": ("adjudicated", 1, 5),
    }
    assert {task.state for task in worklist.tasks_for(ben)} == {"not started", "adjudicated"}  # the review is the pair's, not anna's

    client.force_login(annotator)
    assert sorted(_rows(client)) == sorted(
        [("Fresh", "not started"), ("Started", "in progress"), ("Finished", "done"), ("Reviewed", "adjudicated")]
    )
    assert _rows(client, state="in progress") == [("Started", "in progress")]
    assert _rows(client, project=projects["Finished"][0].pk) == [("Finished", "done")]
    assert _rows(client, state="done", project=projects["Fresh"][0].pk) == []
    assert len(_rows(client, state="bogus")) == 0  # an unknown state shows nothing, and no error


def test_the_task_list_is_mine_alone_and_says_so_when_empty(client, tram_corpus, owner, annotator, outsider):
    tram_project(tram_corpus, owner, [annotator], "Anna's")
    client.force_login(outsider)
    page = client.get(reverse("annotation:task_list")).content.decode()
    assert "Nothing is assigned to you yet" in page and "Anna&#x27;s" not in page
