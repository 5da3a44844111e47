"""The Models page, rollback and the API name models one way: the shipped default model, the hand-calibrated
MiniLM aligner, vN (:mod:`alignment.aligning.model_names`)."""

from __future__ import annotations

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from alignment.aligning import service as aligning
from alignment.models import AlignmentRun
from annotation import services
from annotation.models import AnnotationProject, ModelActivation, ModelVersion, TrainingSnapshot


@pytest.fixture
def shipped_project(tram_corpus, owner, monkeypatch) -> AnnotationProject:
    """A project whose suggestions come from the shipped default model (ALIGNER_MODEL_DIR), as the app's own runs do."""
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # nothing runs: only names are read
    run = aligning.alignment_run_create(corpus=tram_corpus, model_dir=settings.ALIGNER_MODEL_DIR)
    return services.project_create(name="Shipped", corpus=tram_corpus, created_by=owner, suggestion_run=run)


def _promoted_v1(project: AnnotationProject, owner) -> ModelVersion:
    """v1 made active by a promotion row, as the registry leaves it (no files: rollback never loads the base)."""
    snapshot = TrainingSnapshot.objects.create(project=project, splits={}, items=[], label_event_ids=[], counts={})
    version = ModelVersion.objects.create(
        project=project, number=1, snapshot=snapshot, config={}, path="/nonexistent/v1", checksum="0" * 64, metrics={"dev": {}, "test": {}},
    )  # fmt: skip
    ModelActivation.objects.create(project=project, version=version, previous=None, action="promote", by=owner)
    AnnotationProject.objects.filter(pk=project.pk).update(active_model=version)
    return version


def test_the_header_names_the_shipped_default_model_not_an_untrained_aligner(client, owner, shipped_project) -> None:
    client.force_login(owner)
    page = client.get(f"/annotate/projects/{shipped_project.pk}/models/").content.decode()
    assert '<strong id="active-model">the shipped default model</strong>' in page
    assert '(<span id="suggestion-model">the shipped default model</span>)' in page
    assert "untrained aligner" not in page and ">untrained<" not in page
    assert '<option value="untrained">the shipped default model (no version of this project)</option>' in page
    detail = client.get(f"/annotate/projects/{shipped_project.pk}/").content.decode()
    assert f"run #{shipped_project.suggestion_run_id}</a> (the shipped default model)" in detail
    AlignmentRun.objects.filter(pk=shipped_project.suggestion_run_id).update(status="succeeded")  # the form lists finished runs
    form = client.get(f"/annotate/projects/new/?corpus={shipped_project.corpus_id}").content.decode()
    assert f"#{shipped_project.suggestion_run_id} · the shipped default model · " in form


def test_rollback_says_what_it_goes_back_to_and_does(client, owner, shipped_project) -> None:
    _promoted_v1(shipped_project, owner)
    client.force_login(owner)
    url = f"/annotate/projects/{shipped_project.pk}/models/"
    page = client.get(url).content.decode()
    assert '<strong id="active-model">v1</strong>' in page
    assert ">Roll back to the shipped default model</button>" in page
    answer = client.post(url + "rollback/", follow=True).content.decode()
    assert "Rolled back to the shipped default model; re-aligning the project&#x27;s pairs with it." in answer
    shipped_project.refresh_from_db()
    assert shipped_project.active_model is None and shipped_project.pending_suggestion_run.model_label == "the shipped default model"
    assert '<strong id="active-model">the shipped default model</strong>' in answer
    assert ">Undo the rollback: promote v1 again</button>" in answer  # rolling a rollback back is a re-promotion
    assert ">Roll back to" not in answer
    assert "re-aligning with the shipped default model in" in answer
    assert "Rollback: v1 → <strong>the shipped default model</strong> (rollback of v1)" in answer
    assert "Promote: the shipped default model → <strong>v1</strong>" in answer


def test_the_api_uses_the_same_names(owner, shipped_project) -> None:
    api = APIClient()
    api.force_authenticate(owner)
    project = api.get(f"/api/projects/{shipped_project.pk}/").json()
    assert project["active_model_label"] == "the shipped default model" == project["suggestion_model_label"]
    run = api.get(f"/api/alignment-runs/{shipped_project.suggestion_run_id}/").json()
    assert run["model_label"] == "the shipped default model" and run["model_version"].startswith("default_model (sha256 ")
    assert "/" not in run["model_version"]  # the server's directories stay on the server
    _promoted_v1(shipped_project, owner)
    assert api.get(f"/api/projects/{shipped_project.pk}/").json()["active_model_label"] == "v1"
