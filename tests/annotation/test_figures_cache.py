"""A project's page-wide figures are cached where every web process of the host reads them, not in one process's memory."""

from __future__ import annotations

from django.conf import settings
from django.core.cache.backends.filebased import FileBasedCache

from annotation import selectors


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
