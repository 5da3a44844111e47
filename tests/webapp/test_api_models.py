"""REST API: a project's model versions (read by managers and viewers) and their promotion (managers)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from alignment.aligning.measures import run_measure
from annotation import services
from annotation.models import AnnotationProject, ModelActivation, ModelVersion, TrainingSnapshot
from annotation.training import service as training
from tests.annotation.gold_set import build_gold_project
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments
from webapp.accounts.services import api_token_create

VERSIONS = "projects/{project}/model-versions/"


@pytest.fixture
def registered_version(api_world) -> ModelVersion:
    """A version row as the registry stores it; its directory does not exist (enough to read it, not to promote it)."""
    snapshot = TrainingSnapshot.objects.create(project=api_world.project, splits={}, items=[], label_event_ids=[], counts={})
    return ModelVersion.objects.create(
        project=api_world.project, number=1, snapshot=snapshot, config={"measure": "jaccard"}, path="/nonexistent/v1",
        checksum="0" * 64, metrics={"dev": {"group": {"task1": {"f1": 0.5}}}, "test": {"group": {"task1": {"f1": 0.4}}}},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("persona", "code"), [("manager", 200), ("viewer", 200), ("staff", 200), ("anna", 403), ("outsider", 404), (None, 401)]
)
def test_model_versions_are_read_by_managers_and_viewers(api_world, registered_version, persona, code):
    client = api_world.client(persona)
    listing = client.get(api_world.url(VERSIONS))
    assert listing.status_code == code
    assert client.get(api_world.url(f"{VERSIONS}{registered_version.pk}/")).status_code == code
    if code == 200:
        [row] = listing.json()["results"]
        assert row["name"] == "v1" and row["active"] is False and row["metrics"]["test"]["group"]["task1"]["f1"] == 0.4
        assert "path" not in row  # a server folder is nobody's business through the API


def test_a_version_of_another_project_is_not_found_here(api_world, registered_version):
    other = services.project_create(name="Other", corpus=api_world.corpus, created_by=api_world.users["owner"])
    assert api_world.client("manager").get(f"/api/projects/{other.pk}/model-versions/{registered_version.pk}/").status_code == 404


@pytest.mark.parametrize(("persona", "code"), [("viewer", 403), ("anna", 403), ("outsider", 404)])
def test_only_managers_promote(api_world, registered_version, persona, code):
    response = api_world.client(persona).post(api_world.url(f"{VERSIONS}{registered_version.pk}/promote/"), {}, format="json")
    assert response.status_code == code
    assert not ModelActivation.objects.exists()


def test_a_version_whose_files_are_gone_is_refused_with_the_path(api_world, registered_version):
    response = api_world.client("manager").post(api_world.url(f"{VERSIONS}{registered_version.pk}/promote/"), {}, format="json")
    assert response.status_code == 400 and "/nonexistent/v1/checksums.json: missing" in response.json()["non_field_errors"][0]
    assert not ModelActivation.objects.exists()


@pytest.mark.slow
def test_promotion_through_the_api_activates_a_trained_version_and_realigns(owner, settings, tmp_path, monkeypatch):
    settings.MODEL_DIR = tmp_path / "models"
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # jobs run in-process below, no worker
    project, annotator = build_gold_project(owner)
    job = training.training_job_create(project=project, created_by=owner, epochs=15, lr=0.1)
    version = training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu").version
    viewer = get_user_model().objects.create_user("vera")
    services.membership_set(project=project, user=viewer, role="viewer")

    def client(user) -> APIClient:
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user).key}")
        return api

    url = f"/api/projects/{project.pk}/model-versions/{version.pk}/promote/"
    assert client(viewer).post(url, {}, format="json").status_code == 403
    forced_without_reason = client(owner).post(url, {"force": True}, format="json")
    assert forced_without_reason.status_code == 400 and "needs a reason" in forced_without_reason.json()["reason"][0]
    response = client(owner).post(url, {}, format="json")  # v1 beats the base aligner on its test documents
    assert response.status_code == 200, response.content
    activation = ModelActivation.objects.get()
    assert response.json() == {
        "id": activation.pk, "action": "promote", "version": version.pk, "previous": None,
        "reason": activation.reason, "alignment_run": activation.alignment_run_id,
        "model_label": "v1", "previous_model_label": "the hand-calibrated aligner on jaccard",  # the gold project's suggestion run
    }  # fmt: skip
    assert AnnotationProject.objects.get(pk=project.pk).active_model == version and activation.alignment_run_id is not None
    again = client(owner).post(url, {}, format="json")
    assert again.status_code == 400 and "already the active model" in again.json()["non_field_errors"][0]
    listed = results(client(viewer).get(f"/api/projects/{project.pk}/model-versions/"))
    assert [(row["name"], row["active"]) for row in listed] == [("v1", True)]
