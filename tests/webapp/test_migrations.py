"""Every model change comes with its migration: ``makemigrations --check`` finds nothing to write."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_and_the_migrations_agree() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit_:  # --check exits with 1 when a migration is missing
        pytest.fail(f"a model change has no migration (run manage.py makemigrations):\n{out.getvalue()}; exit {exit_.code}")
    assert "No changes detected" in out.getvalue()
