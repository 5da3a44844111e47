"""REST API: gold dataset exports (start, status, download), for the project's managers only."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest

from annotation import services
from annotation.export import service as export
from annotation.export.models import ExportJob
from tests.webapp.api_support import api_world, fast_password_hashing, results  # noqa: F401 - pytest fixtures used as arguments

EXPORTS = "projects/{project}/exports/"


@pytest.fixture
def gold_world(api_world, settings, tmp_path, monkeypatch):
    """The tram pair verified as gold: both annotators agree on one item. Export jobs are queued by hand below."""
    settings.EXPORT_DIR = tmp_path / "exports"
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # jobs run in-process below, no worker
    for persona in ("anna", "ben"):
        services.label_record(
            project=api_world.project, annotator=api_world.users[persona], pair=api_world.pair,
            simple_sentence_id=api_world.simple[0].pk, complex_sentence_id=api_world.complex_[0].pk, label="aligned",
            expected_previous=None,
        )  # fmt: skip
    services.pair_verify(project=api_world.project, pair=api_world.pair, by=api_world.users["owner"])
    return api_world


def test_a_manager_exports_watches_and_downloads_the_zip(gold_world):
    client = gold_world.client("manager")
    started = client.post(gold_world.url(EXPORTS), {"formats": ["jsonl", "csv"], "seed": 3}, format="json")
    assert started.status_code == 201, started.content
    assert started.json()["status"] == "queued" and started.json()["options"]["formats"] == ["jsonl", "csv"]
    job_id = started.json()["id"]
    assert client.get(gold_world.url(f"{EXPORTS}{job_id}/download/")).status_code == 404  # not written yet
    export.export_job_execute(job_id=job_id)  # what the worker does
    body = client.get(gold_world.url(f"{EXPORTS}{job_id}/")).json()
    assert body["status"] == "succeeded" and body["percent"] == 100 and body["items_written"] == 1
    listed = {entry["name"]: entry for entry in body["files"]}
    assert {"README.md", "export.zip", "jsonl/train.jsonl"} <= set(listed)
    download = client.get(gold_world.url(f"{EXPORTS}{job_id}/download/"))
    assert (
        download.status_code == 200
        and download["Content-Disposition"] == f'attachment; filename="export-{gold_world.project.pk}-{job_id}.zip"'
    )
    content = b"".join(download.streaming_content)
    assert hashlib.sha256(content).hexdigest() == listed["export.zip"]["sha256"]
    assert "README.md" in zipfile.ZipFile(io.BytesIO(content)).namelist()
    card = b"".join(client.get(gold_world.url(f"{EXPORTS}{job_id}/download/?name=README.md")).streaming_content)
    assert hashlib.sha256(card).hexdigest() == listed["README.md"]["sha256"]
    assert [row["id"] for row in results(client.get(gold_world.url(EXPORTS)))] == [job_id]


def test_only_listed_files_can_be_downloaded(gold_world):
    client = gold_world.client("manager")
    job_id = client.post(gold_world.url(EXPORTS), {"formats": ["jsonl"]}, format="json").json()["id"]
    export.export_job_execute(job_id=job_id)
    for name in ("../../../etc/passwd", "jsonl/../README.md", "settings.py"):
        response = client.get(gold_world.url(f"{EXPORTS}{job_id}/download/"), {"name": name})
        assert response.status_code == 404 and "has no file called" in response.json()["detail"]


@pytest.mark.parametrize(("persona", "code"), [("anna", 403), ("viewer", 403), ("outsider", 404), (None, 401)])
def test_exports_are_for_managers_only(gold_world, persona, code):
    job = ExportJob.objects.create(project=gold_world.project, options={})
    client = gold_world.client(persona)
    assert client.get(gold_world.url(EXPORTS)).status_code == code
    assert client.get(gold_world.url(f"{EXPORTS}{job.pk}/")).status_code == code
    assert client.get(gold_world.url(f"{EXPORTS}{job.pk}/download/")).status_code == code
    assert client.post(gold_world.url(EXPORTS), {}, format="json").status_code == code
    assert ExportJob.objects.count() == 1


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"formats": ["pdf"]}, "formats", "not a valid choice"),
        ({"fractions": {"train": 0.9, "dev": 0.2, "test": 0.1}}, "fractions", "sum to 1"),
        ({"score_min": 10}, "score_metric", "choose bleu or gleu"),
        ({"score_metric": "bleu", "score_min": 150}, "score_min", "run from 0 to 100"),
        ({"seed": "x"}, "seed", "valid integer"),
    ],
)
def test_bad_export_options_name_the_field_and_queue_nothing(gold_world, payload, field, message):
    response = gold_world.client("manager").post(gold_world.url(EXPORTS), payload, format="json")
    assert response.status_code == 400 and message in str(response.json()[field])
    assert not ExportJob.objects.exists()


def test_a_project_without_gold_has_nothing_to_export(api_world):
    response = api_world.client("manager").post(api_world.url(EXPORTS), {}, format="json")
    assert response.status_code == 400 and "has nothing to export" in response.json()["non_field_errors"][0]
    assert not ExportJob.objects.exists()


def test_a_manager_cancels_a_waiting_export_and_an_annotator_may_not(gold_world):
    job_id = gold_world.client("manager").post(gold_world.url(EXPORTS), {"formats": ["csv"]}, format="json").json()["id"]
    assert gold_world.client("anna").post(gold_world.url(f"{EXPORTS}{job_id}/cancel/")).status_code == 403
    cancelled = gold_world.client("manager").post(gold_world.url(f"{EXPORTS}{job_id}/cancel/"))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert ExportJob.objects.get(pk=job_id).status == "cancelled"
