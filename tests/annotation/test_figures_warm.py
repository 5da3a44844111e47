"""A bulk load counts the manager's figures ahead (annotation.selectors.figures_warm): the first view of a large project's
pages reads them from the cache instead of counting them in the request."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from procrastinate.contrib.django.models import ProcrastinateJob

from annotation import selectors, services
from annotation.adjudication import agreement_sql
from annotation.intake.gold_import import gold_import
from annotation.projects import summary
from annotation.training import views as training_views
from tests.annotation.conftest import tiny_gold_pair

TASK = "annotation.project_figures_refresh"


def _warm_jobs() -> list[dict]:
    return [job.args for job in ProcrastinateJob.objects.filter(task_name=TASK, status="todo").order_by("id")]


def _project(tram_corpus, owner, annotator):
    project = services.project_create(name="Warm", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=annotator, role="annotator")
    return project


def _refuse(*_args, **_kwargs):
    raise AssertionError("counted in the request: the warm figures were not read from the cache")


def test_a_bulk_assignment_queues_the_managers_figures_and_their_first_view_reads_them(
    tram_corpus, owner, annotator, settings, monkeypatch
):
    settings.PROJECT_FIGURES_WARM_MIN_ITEMS = 1  # the tram project's one assignment is "bulk" here
    project = _project(tram_corpus, owner, annotator)
    assert services.assignments_distribute(project=project) == 1
    jobs = _warm_jobs()
    assert sorted(job["recount"] for job in jobs) == sorted(selectors.WARMED_FIGURES)
    assert {job["project_id"] for job in jobs} == {project.pk}
    for job in jobs:  # what the worker runs
        selectors.project_figures_recount(**job)
    monkeypatch.setattr(selectors, "project_progress_totals", _refuse)
    monkeypatch.setattr(agreement_sql, "agreement_totals", _refuse)
    monkeypatch.setattr(training_views, "snapshot_preview", _refuse)
    assert summary.project_summary(project).totals.assignments == 1
    agreement_sql.agreement_totals_cached(project)
    training_views._preview_figures(project)
    with pytest.raises(AssertionError, match="counted in the request"):
        summary.project_summary(project, annotator=annotator)  # an annotator's own figures were not warmed: counted


def test_a_small_load_queues_nothing(tram_corpus, owner, annotator):
    project = _project(tram_corpus, owner, annotator)
    assert services.assignments_distribute(project=project) == 1  # under PROJECT_FIGURES_WARM_MIN_ITEMS (1,000)
    assert _warm_jobs() == []


def test_a_large_gold_import_warms_them_too(db, settings) -> None:
    settings.PROJECT_FIGURES_WARM_MIN_ITEMS = 3  # the three imported labels
    owner = get_user_model().objects.create_user("gold-owner", password="g-pass-123")
    pair = tiny_gold_pair()
    report = gold_import(project_name="Gold", corpus_name="Gold corpus", language="en", owner=owner, pairs=[pair])
    assert sorted(job["recount"] for job in _warm_jobs()) == sorted(selectors.WARMED_FIGURES)
    assert {job["project_id"] for job in _warm_jobs()} == {report.project.pk}
