"""A project's page-wide figures are cached where every web process of the host reads them, not in one process's memory,
and slow ones are counted again in the background after a change, not inside a request."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.core.cache.backends.filebased import FileBasedCache
from django.db import connection
from django.urls import reverse
from procrastinate.contrib.django import app

from annotation import selectors
from annotation.projects.summary import project_summary


def test_figures_computed_by_one_process_are_read_by_another_until_a_label_changes_them(team_of_two, monkeypatch) -> None:
    project = team_of_two.project
    assert selectors.project_cached(project, "figures-test", lambda: {"kappa": 0.5}) == {"kappa": 0.5}

    def recompute():
        raise AssertionError("another process computed these figures already")

    another_process = FileBasedCache(settings.CACHES["figures"]["LOCATION"], {})  # what a second gunicorn process opens
    monkeypatch.setattr(selectors, "caches", {"figures": another_process})
    assert selectors.project_cached(project, "figures-test", recompute) == {"kappa": 0.5}

    team_of_two.label(team_of_two.anna, 0, 0, "aligned")  # the figures' state changed: computed again
    assert selectors.project_cached(project, "figures-test", lambda: {"kappa": 0.7}) == {"kappa": 0.7}


def _queued_recounts() -> list[dict]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT args FROM procrastinate_jobs WHERE task_name = %s AND status = 'todo'", [selectors.RECOUNT_TASK])
        return [json.loads(args) if isinstance(args, str) else args for (args,) in cursor.fetchall()]


def _run_maintenance_worker() -> None:
    def work() -> None:
        with app.replace_connector(app.connector.get_worker_connector()):
            app.run_worker(queues=["maintenance"], wait=False, install_signal_handlers=False, listen_notify=False)

    with ThreadPoolExecutor(max_workers=1) as pool:  # its own thread and asyncio loop, as tests/alignment/conftest.py does
        pool.submit(work).result()


@pytest.mark.django_db(transaction=True)
def test_slow_figures_are_served_with_their_age_after_a_label_and_counted_again_in_the_background(
    team_of_two, owner, client, settings
) -> None:
    """Past PROJECT_FIGURES_INLINE_MS (0 here: every count is slow), a request after a label gets the last figures and
    their age, and one background job, however many requests ask, counts them again."""
    settings.PROJECT_FIGURES_INLINE_MS = 0
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE procrastinate_jobs CASCADE")
    project, page = team_of_two.project, reverse("annotation:project_detail", args=[team_of_two.project.pk])
    client.force_login(owner)
    assert project_summary(project).totals.touched == 0
    assert "Figures from" not in client.get(page).content.decode()

    team_of_two.label(team_of_two.anna, 0, 0, "aligned")
    selectors.figures_age_reset()  # what each request starts with
    assert project_summary(project).totals.touched == 0  # the last figures, not counted in the request
    assert selectors.figures_served_as_of() is not None
    shown = client.get(page).content.decode()
    assert "Figures from" in shown and "being counted again" in shown
    client.get(page)
    assert _queued_recounts() == [{"project_id": project.pk, "recount": "annotation.projects.summary.summary_recount", "arg": None}]

    _run_maintenance_worker()
    assert _queued_recounts() == []
    selectors.figures_age_reset()  # what each request starts with
    assert project_summary(project).totals.touched == 1  # counted by the job
    assert selectors.figures_served_as_of() is None
    assert "Figures from" not in client.get(page).content.decode()


def test_fast_figures_are_counted_in_the_request_and_a_recount_names_only_the_apps_functions(team_of_two) -> None:
    project = team_of_two.project
    assert project_summary(project).totals.touched == 0
    team_of_two.label(team_of_two.anna, 0, 0, "aligned")
    selectors.figures_age_reset()  # what each request starts with
    assert project_summary(project).totals.touched == 1  # a small project's count is well under the 300 ms default
    assert selectors.figures_served_as_of() is None
    with pytest.raises(ValueError, match="not a figures recount"):
        selectors.project_figures_recount(project_id=project.pk, recount="os.system", arg=None)
