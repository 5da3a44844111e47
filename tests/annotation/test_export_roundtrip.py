"""Export → import → export: Wiki-Manual TSV gold comes back as a pre-labelled project with the same labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from annotation import services
from annotation.export import service as export
from annotation.intake.gold_import import gold_import
from annotation.labels import current_labels
from annotation.models import AnnotationProject, LabelEvent
from annotation.training.snapshot import gold_items
from models_ml.data.wiki_manual import read_wiki_manual_tsv
from tests.annotation.gold_set import build_gold_project

SPLITS = ("train", "dev", "test")


@pytest.fixture(autouse=True)
def export_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # jobs run in-process below, no worker
    with override_settings(EXPORT_DIR=tmp_path / "exports"):
        yield tmp_path / "exports"


def _relabel(project, annotator, pair, simple_index: int, complex_index: int, label: str) -> None:
    simple = pair.simple_document.sentences.get(index=simple_index)
    complex_ = pair.complex_document.sentences.get(index=complex_index)
    previous = current_labels(project, annotator, pair.pk).get((simple.pk, complex_.pk))
    services.label_record(
        project=project, annotator=annotator, pair=pair, simple_sentence_id=simple.pk, complex_sentence_id=complex_.pk,
        label=label, expected_previous=previous.pk if previous else None,
    )  # fmt: skip


@pytest.fixture
def mixed_gold(owner):
    """The gold set with, in its first pair, a split (complex 0 → simple 0 aligned + simple 1 partial) whose group
    is not complete (complex 1 – simple 0 stays unlinked), so a round trip must keep 1:1 links, not whole groups."""
    project, annotator = build_gold_project(owner, verify=False)
    first = project.pairs.order_by("pk").first()
    _relabel(project, annotator, first, 1, 0, "partial")
    _relabel(project, annotator, first, 2, 2, "partial")
    for pair in project.pairs.order_by("pk"):
        services.pair_verify(project=project, pair=pair, by=owner)
    return project


def _label_rows(directory: Path) -> list[tuple]:
    """Every TSV row without the parts of ids that name the article and level (the import renames documents)."""
    rows = []
    for split in SPLITS:
        for line in (directory / f"wiki-manual/{split}.tsv").read_text(encoding="utf-8").splitlines():
            label, simple_id, complex_id, simple_text, complex_text = line.split("\t")
            rows.append((label, simple_id.rsplit("-", 2)[1:], complex_id.rsplit("-", 2)[1:], simple_text, complex_text))
    return sorted(rows)


def _import_export(directory: Path, owner, tmp_path: Path, name: str) -> AnnotationProject:
    combined = tmp_path / f"{name}.tsv"
    combined.write_text("".join((directory / f"wiki-manual/{split}.tsv").read_text(encoding="utf-8") for split in SPLITS), encoding="utf-8")
    report = gold_import(project_name=name, corpus_name=name, language="en", owner=owner, pairs=read_wiki_manual_tsv(combined))
    return report.project


def test_export_import_export_gives_the_same_labels(mixed_gold, owner, tmp_path) -> None:
    first = export.export_job_execute(job_id=export.export_job_create(project=mixed_gold, created_by=owner).pk)
    imported = _import_export(first.directory, owner, tmp_path, "Round trip")
    events = LabelEvent.objects.filter(project=imported)
    assert set(events.values_list("source", flat=True)) == {"import"}
    # 23 aligned and 2 partial links. Complex 0-1 and simple 0-1 form one group whose link complex 1 – simple 0 is
    # missing: importing whole groups would add it (26 events), the 1:1 links keep it out.
    assert sorted(events.values_list("new_label", flat=True)) == ["aligned"] * 23 + ["partial"] * 2
    second = export.export_job_execute(job_id=export.export_job_create(project=imported, created_by=owner).pk)
    before, after = _label_rows(first.directory), _label_rows(second.directory)
    assert len(before) == 96 and [r[0] for r in before].count("partialAligned") == 2
    assert after == before
    # The imported labels are gold for training too, and the second export's statuses say where they came from.
    assert len(gold_items(imported)[0]) == 25
    assert "imported 25" in (second.directory / "README.md").read_text()
    # A third round gives the same rows again: nothing drifts.
    again = _import_export(second.directory, owner, tmp_path, "Round trip 2")
    third = export.export_job_execute(job_id=export.export_job_create(project=again, created_by=owner).pk)
    assert _label_rows(third.directory) == after


def test_deplain_import_exports_as_imported_gold(owner, tmp_path) -> None:
    from django.core.management import call_command

    from tests.annotation.test_training import _write_gold_deplain

    call_command("import_gold", "--gold", str(_write_gold_deplain(tmp_path / "deplain")), "--format", "deplain",
                 "--project", "DEplain gold", "--user", "owner")  # fmt: skip
    project = AnnotationProject.objects.get(name="DEplain gold")
    job = export.export_job_execute(job_id=export.export_job_create(project=project, created_by=owner, formats="tsv").pk)
    rows = [line.split("\t") for split in SPLITS for line in (job.directory / f"wiki-manual/{split}.tsv").read_text().splitlines()]
    assert len(rows) == 6 * 16 and sum(row[0] == "aligned" for row in rows) == 24
    assert "imported 24" in (job.directory / "README.md").read_text()
