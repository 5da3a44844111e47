"""Cancelling an export: a waiting job at once, a running one within its next pairs, and nothing of it left on disk."""

from __future__ import annotations

from annotation.export import service as export
from annotation.export.models import ExportJob
from annotation.export.signals import export_finished
from annotation.export.writers import WikiManualWriter
from tests.annotation.test_export import export_dir, gold_project  # noqa: F401 - pytest fixtures used as arguments


def test_a_running_export_cancelled_stops_at_its_next_beat_and_leaves_no_file(gold_project, owner, export_dir, monkeypatch):
    project, _ = gold_project
    monkeypatch.setattr(export, "_PROGRESS_EVERY", 1)  # a beat after every pair: the gold set has a few
    job = export.export_job_create(project=project, created_by=owner, formats="tsv,jsonl")
    written, finished = [], []
    original = WikiManualWriter.write_pair

    def write_pair(self, exported, split):
        written.append(exported.pair_id)
        if len(written) == 1:  # a manager presses Cancel while the first pair is written
            assert export.export_job_cancel(job=job).status == ExportJob.Status.CANCELLED
        return original(self, exported, split)

    monkeypatch.setattr(WikiManualWriter, "write_pair", write_pair)
    export_finished.connect(listener := lambda **kwargs: finished.append(kwargs["job"].pk))
    try:
        ended = export.export_job_execute(job_id=job.pk)  # no exception: a cancel is not a failure
    finally:
        export_finished.disconnect(listener)
    assert ended.status == ExportJob.Status.CANCELLED and not ended.error and ended.pairs_done <= 1
    assert len(written) == 1 and finished == []  # stopped at the first pair's beat; no webhook says "ready"
    assert not [path for path in export_dir.rglob("*") if path.is_file()] and ended.file_path("README.md") is None


def test_the_card_cancels_a_waiting_export_for_managers_only(gold_project, owner, client, export_dir):
    project, annotator = gold_project
    job = export.export_job_create(project=project, created_by=owner, formats="csv")
    url = f"/annotate/projects/{project.pk}/exports/{job.pk}/"
    client.force_login(owner)
    assert f'action="{url}cancel/"' in client.get(url).content.decode()
    client.force_login(annotator)
    assert client.post(f"{url}cancel/").status_code == 403
    client.force_login(owner)
    card = client.post(f"{url}cancel/", headers={"HX-Request": "true"}).content.decode()
    assert "Cancelled" in card and "hx-trigger" not in card and f'action="{url}cancel/"' not in card
    assert export.export_job_execute(job_id=job.pk).status == ExportJob.Status.CANCELLED  # its task finds it so
    assert not export_dir.exists() or not any(export_dir.rglob("*.csv"))
    finished = export.export_job_execute(job_id=export.export_job_create(project=project, created_by=owner, formats="csv").pk)
    assert export.export_job_cancel(job=finished).status == ExportJob.Status.SUCCEEDED  # too late: nothing changes
