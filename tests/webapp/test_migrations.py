"""Every model change comes with its migration: ``makemigrations --check`` finds nothing to write. And the squashed
migrations a new database is made with describe what the chains they replace describe."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.postgres.operations import CreateExtension
from django.core.management import call_command
from django.db import migrations
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState
from django.db.models import Field

APPS = ("alignment", "annotation", "webapp")
DATA_STATEMENTS = ("UPDATE", "INSERT", "DELETE")  # what a chain's RunSQL does to rows a new database does not have


@pytest.mark.django_db
def test_the_models_and_the_migrations_agree() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit_:  # --check exits with 1 when a migration is missing
        pytest.fail(f"a model change has no migration (run manage.py makemigrations):\n{out.getvalue()}; exit {exit_.code}")
    assert "No changes detected" in out.getvalue()


def _plain(value):
    """A field, index or constraint as comparable data: its deconstruction, fields within it deconstructed too."""
    if isinstance(value, Field) or hasattr(value, "deconstruct") and not isinstance(value, type):
        path, args, kwargs = value.deconstruct()[-3:]
        return (path, _plain(list(args)), _plain(kwargs))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _models(state: ProjectState) -> dict:
    described = {}
    for (app, name), model in state.models.items():
        if app not in APPS:
            continue
        options = dict(model.options)
        for key in ("indexes", "constraints"):  # the order they were added in differs; their names are unique
            options[key] = sorted((_plain(item) for item in options.get(key, [])), key=repr)
        fields = {field_name: _plain(field) for field_name, field in model.fields.items()}
        described[app, name] = (fields, _plain(options), [repr(base) for base in model.bases])
    return described


def _schema_statements(loader: MigrationLoader, keys) -> set[str]:
    """The operations of these migrations that change a schema outside the models: SQL other than data steps (a
    column's storage), and extensions."""
    found = set()
    for key in keys:
        for operation in loader.graph.nodes[key].operations:
            if isinstance(operation, migrations.RunSQL):
                statements = [operation.sql] if isinstance(operation.sql, str) else list(operation.sql)
                found |= {" ".join(sql.split()) for sql in statements if not sql.strip().upper().startswith(DATA_STATEMENTS)}
            elif isinstance(operation, CreateExtension):
                found.add(f"CREATE EXTENSION {operation.name}")
    return found


def test_the_squashed_migrations_describe_the_chains_they_replace() -> None:
    """The same models, fields, options, indexes and constraints at the end of the chains as at the end of the squashed
    migrations (Django's migration states, built without a database), and the same schema-changing SQL in both."""
    chains = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    squashed = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=True)
    squashes = [key for key, migration in squashed.graph.nodes.items() if key[0] in APPS and migration.replaces]
    assert {app for app, _ in squashes} == set(APPS), squashes
    assert _models(chains.project_state()) == _models(squashed.project_state())
    replaced = [tuple(old) for key in squashes for old in squashed.graph.nodes[key].replaces]
    assert _schema_statements(chains, replaced) == _schema_statements(squashed, squashes) != set()
