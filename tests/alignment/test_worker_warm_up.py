"""A worker on the alignment queue imports the aligner (torch) when it starts, not in its first user's run; a worker on
other queues does not import it at all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.alignment.conftest import REPO_ROOT

PROBE = (
    "import sys, django; django.setup(); from alignment.management.commands.procrastinate import _warm_up; "
    "print('torch' in sys.modules); _warm_up({queues!r}); print('torch' in sys.modules)"
)


@pytest.mark.parametrize(("queues", "imported"), [(["alignment", "imports"], True), (["embedding", "mining"], False)])
def test_a_worker_imports_the_aligner_before_its_first_job_only_for_the_alignment_queue(
    db, worker_subprocess_env, queues, imported
) -> None:
    env = {**worker_subprocess_env, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(queues=queues)], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["False", str(imported)]  # the command alone imports no torch
