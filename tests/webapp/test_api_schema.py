"""REST API: the OpenAPI schema is valid and complete, its docs pages load their assets locally, and a
schemathesis run over every operation finds no server error and no response that breaks the schema."""

from __future__ import annotations

import re
from io import StringIO

import pytest
import schemathesis
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from alignment.importing.models import ImportJob
from alignment.mining.models import MiningJob
from alignment.models import CandidateAlignment
from annotation import services
from annotation.export import service as export
from annotation.models import Assignment, ModelVersion, TrainingSnapshot
from tests.webapp.api_support import api_world, fast_password_hashing  # noqa: F401 - pytest fixtures used as arguments
from webapp.accounts.services import api_token_create
from webapp.wsgi import application


def test_schema_validates_without_warnings(tmp_path):
    """drf-spectacular could infer every operation; a warning (a guessed type or name) fails here."""
    target = tmp_path / "schema.yaml"
    call_command("spectacular", validate=True, fail_on_warn=True, file=str(target), stderr=StringIO())
    schema = target.read_text()
    paths = (
        "/api/alignment-runs/{id}/cancel/",
        "/api/projects/{project_id}/labels/{id}/",
        "/api/candidates/",
        "/api/mining-jobs/{id}/pairs/",
    )
    for path in paths:
        assert f"  {path}:" in schema


def test_schema_is_public_and_documents_token_auth(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.") and "tokenAuth" in schema["components"]["securitySchemes"]
    run_create = schema["paths"]["/api/alignment-runs/"]["post"]
    assert run_create["responses"].keys() >= {"201"} and run_create["requestBody"]["required"] is True
    assert "409" in schema["paths"]["/api/projects/{project_id}/labels/"]["post"]["responses"]


@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_load_their_scripts_from_our_static_files(client, path):
    page = client.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html)
    assert sources and all(source.startswith("/static/") for source in sources), sources
    for source in sources:
        assert finders.find(source.removeprefix("/static/")), f"{source} is not among the static files"
    assert "cdn" not in html.lower()


# Loaded once at collection (no database needed: the schema is generated from the URL conf). pytest then
# gets one test per operation. (schemathesis.pytest.from_fixture would load it per test, but its lazy
# loader does not run under pytest 9.)
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
schema.config.generation.update(database="none")


@pytest.fixture
def wsgi_in_test_transaction(db):
    """The WSGI calls run inside the test's transaction, so ``close_old_connections`` (which Django's own
    test client unhooks too) must not close the connection around each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def real_ids(api_world, settings, tmp_path) -> dict[str, int]:
    """Ids of existing rows, one per resource, for aiming generated requests at real data: the tram pair is
    gold (both annotators agree, verified) and exported once, so downloads find files."""
    settings.EXPORT_DIR = tmp_path / "exports"
    anna = api_world.users["anna"]
    for annotator in (api_world.users["ben"], anna):
        event = services.label_record(
            project=api_world.project, annotator=annotator, pair=api_world.pair, simple_sentence_id=api_world.simple[0].pk,
            complex_sentence_id=api_world.complex_[0].pk, label="aligned", expected_previous=None,
        )  # fmt: skip
    services.pair_verify(project=api_world.project, pair=api_world.pair, by=api_world.users["owner"])
    export_job = export.export_job_create(project=api_world.project, created_by=api_world.users["owner"], enqueue=False, formats=["csv"])
    assert export.export_job_execute(job_id=export_job.pk).status == "succeeded"
    snapshot = TrainingSnapshot.objects.create(project=api_world.project, splits={}, items=[], label_event_ids=[], counts={})
    version = ModelVersion.objects.create(
        project=api_world.project, number=1, snapshot=snapshot, config={}, path="/nonexistent", checksum="0" * 64,
        metrics={"dev": {}, "test": {}},
    )  # fmt: skip
    mining_job = MiningJob.objects.create(
        source_corpus=api_world.corpus, target_corpus=api_world.corpus, method="muss", config={}, config_hash="fuzzed", status="succeeded"
    )
    return {
        "alignment-runs": api_world.run.pk, "mining-jobs": mining_job.pk, "candidates": CandidateAlignment.objects.filter(run=api_world.run).first().pk,
        "corpora": api_world.corpus.pk, "documents": api_world.pair.simple_document_id, "pairs": api_world.pair.pk,
        "projects": api_world.project.pk, "assignments": Assignment.objects.filter(annotator=anna).get().pk,
        "labels": event.pk, "model-versions": version.pk, "exports": export_job.pk,
        "item-events": services.item_event_record(
            project=api_world.project, annotator=anna, pair=api_world.pair, kind="comment", text="unclear"
        ).pk,
        "tokens": api_token_create(user=api_world.users["owner"], name="a spare token to revoke").token.pk,
        "imports": ImportJob.objects.create(
            created_by=api_world.users["owner"], corpus_name="Fuzzed import", language="en", pairing="all", options={}
        ).pk,
        # body fields
        "pair": api_world.pair.pk, "corpus": api_world.corpus.pk, "simple_sentence": api_world.simple[0].pk,
        "complex_sentence": api_world.complex_[1].pk, "suggestion_run": api_world.run.pk, "expected_previous": event.pk,
        "source_corpus": api_world.corpus.pk,
    }  # fmt: skip


@pytest.fixture
def keys(api_world) -> dict[str, str]:
    """A token per persona for all of a test's requests (a token made for each request cost a seventh of the fuzzing)."""
    return {persona: api_token_create(user=api_world.users[persona]).key for persona in ("anna", "owner")}


def aim_at_real_rows(case, ids: dict[str, int]) -> None:
    """Random ids almost never exist, so every request would stop at 404 or 400. Point the project at the real
    one, and about half the other ids (those generated even) at real rows, so the writes and details run too."""
    path = case.path_parameters or {}  # values arrive as strings, in negative mode not even digits
    if "project_id" in path:
        path["project_id"] = str(ids["projects"])
    if "id" in path and str(path["id"]).isdigit() and int(path["id"]) % 2 == 0:
        path["id"] = str(ids[case.path.split("/{id}")[0].rsplit("/", 1)[-1]])
    if isinstance(case.body, dict):
        for key, value in list(case.body.items()):
            if key in ids and isinstance(value, int) and not isinstance(value, bool) and value % 2 == 0:
                case.body[key] = ids[key]
            if key == "pairs" and isinstance(value, list) and len(value) % 2 == 1:
                case.body[key] = [ids["pair"]]
            if key == "annotator" and isinstance(value, str) and len(value) % 2 == 0:
                case.body[key] = "anna"


@pytest.mark.slow  # 50 operations: schemathesis's coverage phase (3,300 boundary and negative requests), 12 generated requests each
@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=12, database=None)
def test_api_fuzzing_finds_no_server_error_and_no_schema_violation(case, api_world, real_ids, keys, wsgi_in_test_transaction):
    """Label writes as an annotator with an assignment, everything else as the project manager who owns the corpus."""
    aim_at_real_rows(case, real_ids)
    persona = "anna" if "/labels/" in case.path else "owner"
    # The token operations can revoke the token a request is sent with: a new one for each of their requests.
    key = api_token_create(user=api_world.users[persona]).key if case.path.startswith("/api/auth/") else keys[persona]
    case.call_and_validate(headers={"Authorization": f"Token {key}"}, checks=[not_a_server_error, response_schema_conformance])
