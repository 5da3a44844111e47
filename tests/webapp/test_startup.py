"""A process of the app starts without the heavy libraries: they are imported where they are used.

A web process loads the URL conf on its first request and a worker its task modules when it starts; with torch,
scikit-learn, statsmodels and POT among their imports each start took twice as long (``manage.py check`` 7.4 s
against 3.9 s on a 2-core machine) for pages that never use them. The aligner, training, agreement statistics and
word alignment import them on first use.

Every process also sets its garbage collector's young threshold at start-up (``GC_YOUNG_THRESHOLD``): at Python's 700,
a mining job's batches set off full passes over the whole process every few batches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sklearn", "statsmodels", "ot", "sentence_transformers", "transformers")

PROBE = """
import json, sys
import django
django.setup()
import {modules}
print(json.dumps(sorted(name for name in {names!r} if name in sys.modules)))
"""
TASK_MODULES = "alignment.tasks, annotation.tasks, webapp.tasks"


def imported_after(modules: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh process has imported after Django's set-up and ``import modules``."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "PYTHONPATH": str(REPO_ROOT)}
    env["DATABASE_URL"] = env.get("DATABASE_URL") or "postgresql://nobody@127.0.0.1:1/none"  # nothing here connects
    code = PROBE.format(modules=modules, names=names)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_url_conf_and_the_task_modules_import_no_heavy_library() -> None:
    assert imported_after(f"webapp.urls, {TASK_MODULES}", HEAVY) == []


@pytest.mark.slow
def test_a_worker_or_command_starts_without_scipy_or_the_mining_search() -> None:
    """Django's set-up and the task modules (a worker's start, every ``manage.py`` command's) leave scipy and the mining
    search chain to the first job that needs them: registering one setting's system check imported both, about 0.35 s
    of every process's start. The check still runs (tests/alignment/test_mining_search.py)."""
    assert imported_after(TASK_MODULES, ("scipy", "alignment.mining.search_backend")) == []


def test_every_process_of_the_app_collects_its_young_objects_less_often() -> None:
    import gc

    from django.conf import settings

    from webapp.apps import collector_tune

    assert settings.GC_YOUNG_THRESHOLD == 10000 or "GC_YOUNG_THRESHOLD" in os.environ
    assert gc.get_threshold()[0] == settings.GC_YOUNG_THRESHOLD  # set by the app's start-up, here the test process's
    before = gc.get_threshold()
    try:
        collector_tune(0)
        assert gc.get_threshold() == before  # 0: Python's own
        collector_tune(5000)
        assert gc.get_threshold() == (5000, *before[1:])  # the older generations keep their ratios
    finally:
        gc.set_threshold(*before)


def test_a_negative_collector_threshold_is_refused_naming_the_variable() -> None:
    env = {**os.environ, "GC_YOUNG_THRESHOLD": "-5", "PYTHONPATH": str(REPO_ROOT)}
    env["DATABASE_URL"] = env.get("DATABASE_URL") or "postgresql://nobody@127.0.0.1:1/none"  # nothing here connects
    result = subprocess.run(
        [sys.executable, "-c", "import webapp.settings"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "GC_YOUNG_THRESHOLD=-5" in result.stderr
