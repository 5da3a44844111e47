"""The project page's figures over every label are cached until something they depend on changes."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import services
from annotation.models import GoldAnswer, GoldItem
from annotation.projects.summary import project_summary


def _summary_sums(queries) -> list[str]:
    return [query["sql"] for query in queries if "percentile_cont" in query["sql"] or "bool_or" in query["sql"]]


def test_the_figures_are_summed_again_only_after_a_change(client, owner, team_of_two):
    team = team_of_two
    first = project_summary(team.project)
    with CaptureQueriesContext(connection) as again:
        assert project_summary(team.project) == first
    assert len(again) == 1 and not _summary_sums(again)  # one query: the project's state
    team.label(team.anna, 0, 0, "aligned")
    assert project_summary(team.project).totals.touched == first.totals.touched + 1  # a label
    gold = GoldItem.objects.create(project=team.project, simple_sentence=team.simple[1], complex_sentence=team.complex_[1], label="aligned")
    GoldAnswer.objects.create(gold_item=gold, annotator=team.ben, label="partial")
    assert [(row.annotator, row.answered, row.correct) for row in project_summary(team.project).accuracy] == [(team.ben, 1, 0)]
    services.membership_set(project=team.project, user=team.ben, role="viewer")  # a member's role
    assert project_summary(team.project).shortfall["annotators"] == first.shortfall["annotators"] - 1


def test_the_page_shows_new_progress_at_once(client, owner, team_of_two):
    team = team_of_two
    client.force_login(owner)
    url = reverse("annotation:project_detail", args=[team.project.pk])
    assert client.get(url).context["percent"] == 0
    team.label(team.anna, 0, 0, "aligned")
    team.label(team.ben, 1, 1, "partial")
    assert client.get(url).context["percent"] == round(100 * 2 / (2 * len(team.simple)))
    client.force_login(team.anna)
    assert client.get(url).context["percent"] == round(100 / len(team.simple))  # her own work
