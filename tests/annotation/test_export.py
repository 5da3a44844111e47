"""Gold dataset exports: what goes in, the formats, splits, the dataset card, reproducibility and bad input."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.test import override_settings

from annotation import services
from annotation.export import service as export
from annotation.export.models import ExportJob
from annotation.export.selection import ExportDataError, IsoTime
from annotation.export.signals import export_finished
from annotation.export.writers import WikiManualWriter
from annotation.models import LabelEvent
from annotation.training.snapshot import gold_items
from tests.annotation.gold_set import build_gold_project

SPLITS = ("train", "dev", "test")


@pytest.fixture(autouse=True)
def export_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # jobs run in-process below, no worker
    with override_settings(EXPORT_DIR=tmp_path / "exports"):
        yield tmp_path / "exports"


@pytest.fixture
def gold_project(owner):
    project, annotator = build_gold_project(owner)
    project.corpus.metadata = {"licence": "CC-BY-4.0", "source": "written for the tests", "url": "https://example.org/gold"}
    project.corpus.save(update_fields=["metadata"])
    return project, annotator


def run_export(project, by, **options) -> ExportJob:
    job = export.export_job_create(project=project, created_by=by, **options)
    return export.export_job_execute(job_id=job.pk)


def read_tsv(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_writes_every_format_split_by_document_pair(gold_project, owner) -> None:
    project, _ = gold_project
    job = run_export(project, owner)
    assert job.status == ExportJob.Status.SUCCEEDED and job.pairs_done == job.pairs_total == 6
    names = {entry["name"] for entry in job.files}
    for folder, suffix in (("wiki-manual", "tsv"), ("jsonl", "jsonl"), ("csv", "csv"), ("parquet", "parquet"), ("simplification", "jsonl")):
        assert {f"{folder}/{split}.{suffix}" for split in SPLITS} <= names
    assert {"README.md", "export.zip"} <= names
    root = job.directory
    assert all((root / name).stat().st_size == entry["bytes"] for name, entry in ((e["name"], e) for e in job.files))
    # Wiki-Manual TSV: every sentence pair of each verified 4 x 4 document pair, original label vocabulary.
    rows = {split: read_tsv(root / f"wiki-manual/{split}.tsv") for split in SPLITS}
    assert sum(len(r) for r in rows.values()) == 6 * 16
    labels = [row[0] for r in rows.values() for row in r]
    assert labels.count("aligned") == 24 and labels.count("notAligned") == 72 and set(labels) == {"aligned", "notAligned"}
    first = rows["train"][0]
    assert len(first) == 5 and first[1].rsplit("-", 3)[1:] == ["1", "0", "0"] and first[2].rsplit("-", 3)[1:] == ["0", "0", "0"]
    # Splits are by document pair: each article's rows are in exactly one split file; 4 / 1 / 1 pairs.
    articles = {split: {row[2].rsplit("-", 3)[0] for row in r} for split, r in rows.items()}
    assert [len(articles[split]) for split in SPLITS] == [4, 1, 1]
    assert not (articles["train"] & articles["dev"]) and not (articles["train"] & articles["test"])
    # CSV and JSONL: one row per labelled sentence pair, the same rows.
    csv_rows = [row for split in SPLITS for row in csv.DictReader((root / f"csv/{split}.csv").open(encoding="utf-8"))]
    jsonl_rows = [row for split in SPLITS for row in read_jsonl(root / f"jsonl/{split}.jsonl")]
    assert len(csv_rows) == len(jsonl_rows) == len(gold_items(project)[0])
    assert [(r["simple_id"], r["complex_id"], r["label"]) for r in csv_rows] == [
        (r["simple_id"], r["complex_id"], r["label"]) for r in jsonl_rows
    ]
    assert {r["status"] for r in jsonl_rows} == {"verified"}
    # Simplification set: the 24 one-to-one groups, complex → simple.
    pairs = [row for split in SPLITS for row in read_jsonl(root / f"simplification/{split}.jsonl")]
    assert len(pairs) == 24 and {p["phenomenon"] for p in pairs} == {"rephrasing"}
    assert pairs[0]["complex"] != pairs[0]["simple"] and 0 <= pairs[0]["bleu"] <= 100 and 0 <= pairs[0]["gleu"] <= 100


def test_selection_is_the_training_gold(gold_project, owner) -> None:
    """Exports and training snapshots agree on which labels are gold (the same rules, one per pair here)."""
    project, _ = gold_project
    job = run_export(project, owner, formats="jsonl")
    exported = {
        (row["pair_id"], row["simple_sentence_pk"], row["complex_sentence_pk"], row["label"])
        for split in SPLITS for row in read_jsonl(job.directory / f"jsonl/{split}.jsonl")
    }  # fmt: skip
    assert exported == {tuple(item) for item in gold_items(project)[0]}


def test_jsonl_carries_full_provenance(gold_project, owner) -> None:
    project, annotator = gold_project
    job = run_export(project, owner, formats=["jsonl"])
    rows = [row for split in SPLITS for row in read_jsonl(job.directory / f"jsonl/{split}.jsonl")]
    aligned = next(row for row in rows if row["label"] == "aligned" and row["aligner"] is not None)
    [annotation] = aligned["annotations"]
    assert annotation["annotator"] == "gina" and annotation["annotator_id"] == annotator.pk and annotation["label"] == "aligned"
    assert annotation["source"] == "human" and annotation["event_id"] > 0 and annotation["at"].startswith("20")
    assert aligned["labels"] == {"gina": "aligned"} and aligned["adjudication"] is None
    assert aligned["verification"]["by"] == "owner" and aligned["verification"]["at"]
    assert aligned["aligner"]["run_id"] == project.suggestion_run_id
    assert aligned["aligner"]["model_version"] == project.suggestion_run.model_version
    assert set(aligned["aligner"]["scores"]) == {"jaccard", "tfidf_cosine"} and aligned["aligner"]["measure"] == "jaccard"


def test_the_times_postgresql_writes_are_the_ones_isoformat_wrote(gold_project, owner) -> None:
    """The export reads its label, adjudication and verification times already formatted (IsoTime), as
    ``datetime.isoformat()`` wrote them: UTC, microseconds only when there are any."""
    project, _ = gold_project
    events = LabelEvent.objects.filter(project=project)
    moments = ["2026-12-02T04:18:45+00:00", "2026-12-02T04:18:45.500000+00:00", "1999-01-01T23:59:59.000001+05:30"]
    for pk, moment in zip(events.values_list("pk", flat=True), moments, strict=False):
        events.filter(pk=pk).update(created_at=datetime.fromisoformat(moment))
    pairs = list(events.values_list("created_at", IsoTime("created_at")))
    assert len(pairs) >= 3 and all(written == moment.isoformat() for moment, written in pairs)
    assert {written for _, written in pairs} >= {moments[0], moments[1], "1999-01-01T18:29:59.000001+00:00"}


def test_reexport_is_byte_identical_and_parquet_loads_with_datasets(gold_project, owner, tmp_path) -> None:
    import datasets

    project, _ = gold_project
    first, second = run_export(project, owner), run_export(project, owner)
    assert first.directory != second.directory
    assert [(e["name"], e["sha256"]) for e in first.files] == [(e["name"], e["sha256"]) for e in second.files]
    for name in ("parquet/train.parquet", "export.zip", "README.md"):
        assert (first.directory / name).read_bytes() == (second.directory / name).read_bytes()
    card = (first.directory / "README.md").read_text()
    assert f"job {first.pk}" not in card and str(first.created_at.year) + "-" not in card
    files = {split: str(first.directory / f"parquet/{split}.parquet") for split in SPLITS}
    loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf-cache"))
    assert {split: loaded[split].num_rows for split in SPLITS} == {split: pq.read_metadata(files[split]).num_rows for split in SPLITS}
    assert sum(loaded[split].num_rows for split in SPLITS) == len(gold_items(project)[0])
    assert set(loaded["train"].column_names) >= {"label", "simple_sentence", "complex_sentence", "simple_id", "complex_id", "split"}
    assert set(loaded["test"]["split"]) == {"test"}


def test_dataset_card_counts_labels_sentences_phenomena_agreement_and_licence(gold_project, owner) -> None:
    project, _ = gold_project
    job = run_export(project, owner)
    card = (job.directory / "README.md").read_text()
    assert card.startswith("---\nlicense: CC-BY-4.0\nlanguage:\n- en\n")
    assert "- licence: CC-BY-4.0" in card and "- source: written for the tests" in card and "- url: https://example.org/gold" in card
    assert "| all | 6 | 24 |" in card  # pairs, then aligned count
    assert "unique simple sentences: 24" in card and "unique complex sentences: 24" in card
    assert "| rephrasing | copying | splitting | merging | fusion | deletion |" in card
    assert "| 24 | 0 | 0 | 0 | 0 | 0 |" in card
    assert "Fleiss' kappa: undefined" in card  # one annotator: agreement is undefined, and the card says so
    for entry in job.files:
        if entry["name"] not in ("README.md", "export.zip"):
            assert entry["sha256"] in card


def test_unverified_labels_need_adjudication_or_the_majority_option(team_of_two, owner) -> None:
    team = team_of_two
    services.membership_set(project=team.project, user=owner, role="manager")
    team.label(team.anna, 0, 0, "aligned")
    team.label(team.ben, 0, 0, "aligned")  # both agree: a majority, not verified
    team.label(team.anna, 1, 1, "aligned")
    team.label(team.ben, 1, 1, "partial")  # disagreement: left out
    team.label(team.anna, 2, 2, "partial")
    team.label(team.ben, 2, 2, "not_aligned")
    services.adjudicate(
        project=team.project, reviewer=owner, pair=team.pair, simple_sentence_id=team.simple[2].pk,
        complex_sentence_id=team.complex_[2].pk, label="partial", expected_previous=None,
    )  # fmt: skip
    default = run_export(team.project, owner, formats="jsonl", fractions={"train": 1, "dev": 0, "test": 0})
    [row] = read_jsonl(default.directory / "jsonl/train.jsonl")
    assert (row["status"], row["label"], row["adjudication"]["by"]) == ("adjudicated", "partial", "owner")
    assert {a["annotator"]: a["label"] for a in row["annotations"]} == {"anna": "partial", "ben": "not_aligned"}
    with_majority = run_export(team.project, owner, formats="jsonl", include_majority=True, fractions={"train": 1, "dev": 0, "test": 0})
    rows = read_jsonl(with_majority.directory / "jsonl/train.jsonl")
    assert [(r["simple_index"], r["status"], r["label"]) for r in rows] == [(0, "majority", "aligned"), (2, "adjudicated", "partial")]
    assert "unadjudicated majority labels are included" in (with_majority.directory / "README.md").read_text()


def test_success_sends_export_finished_once(gold_project, owner) -> None:
    project, _ = gold_project
    received = []

    def listener(sender, job, **kwargs):
        received.append((sender, job.pk, job.status))

    export_finished.connect(listener)
    try:
        job = run_export(project, owner, formats="csv")
    finally:
        export_finished.disconnect(listener)
    assert received == [(ExportJob, job.pk, ExportJob.Status.SUCCEEDED)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"formats": "tsv,xml"}, r"formats: unknown format\(s\) 'xml'"),
        ({"score_metric": "bleu", "score_min": -1}, r"score_min: BLEU scores run from 0 to 100, got -1"),
        ({"score_metric": "gleu", "score_max": 120}, r"score_max: GLEU scores run from 0 to 100, got 120"),
        ({"score_metric": "bleu", "score_min": 80, "score_max": 20}, r"score_min: 80 is above score_max 20"),
        ({"score_metric": "rouge"}, r"score_metric: unknown metric 'rouge'"),
        ({"score_min": 10}, r"score_metric: choose bleu or gleu"),
        ({"fractions": {"train": 0.7, "dev": 0.2, "test": 0.2}}, r"fractions: .* sum to 1, got 0.7 \+ 0.2 \+ 0.2 = 1.1"),
        ({"fractions": {"train": 1.0}}, r"fractions: give exactly train, dev, test"),
    ],
)
def test_bad_options_are_refused_by_name(gold_project, owner, export_dir, options, message) -> None:
    project, _ = gold_project
    with pytest.raises(ValueError, match=message):
        export.export_job_create(project=project, created_by=owner, **options)
    assert not ExportJob.objects.exists() and not export_dir.exists()


def test_project_with_nothing_verified_is_refused_without_files(owner, export_dir) -> None:
    project, _ = build_gold_project(owner, verify=False)
    with pytest.raises(ExportDataError, match=r"project 'Gold retraining' has nothing to export: no verified document pairs"):
        export.export_job_create(project=project, created_by=owner)
    assert not ExportJob.objects.exists() and not export_dir.exists()
    # Verified when queued, withdrawn before the worker ran it: the job fails with the same message and writes nothing.
    pair = project.pairs.order_by("pk").first()
    services.pair_verify(project=project, pair=pair, by=owner)
    job = export.export_job_create(project=project, created_by=owner)
    services.pair_verify(project=project, pair=pair, by=owner, verified=False)
    with pytest.raises(ExportDataError):
        export.export_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and "nothing to export" in job.error and job.files == []
    assert not any(path.is_file() for path in export_dir.rglob("*"))


def test_failing_write_leaves_the_job_failed_and_no_partial_files(gold_project, owner, export_dir, monkeypatch) -> None:
    project, _ = gold_project
    calls = []
    original = WikiManualWriter.write_pair

    def failing(self, exported, split):
        calls.append(exported.pair_id)
        if len(calls) == 3:
            raise OSError("No space left on device")
        return original(self, exported, split)

    monkeypatch.setattr(WikiManualWriter, "write_pair", failing)
    job = export.export_job_create(project=project, created_by=owner)
    with pytest.raises(OSError, match="No space left"):
        export.export_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and job.error == "OSError: No space left on device" and job.finished_at
    assert len(calls) == 3 and not any(export_dir.rglob("*.tsv")) and not any(export_dir.rglob("README.md"))
    assert job.file_path("README.md") is None


# --- groups, phenomena and scores (plain data, no database) ---


def _pair_export(complex_texts: list[str], simple_texts: list[str], links: list[tuple[int, int, str]], *, complete: bool = True):
    from annotation.export.selection import ExportItem, PairExport, SentenceRow

    complex_rows = [SentenceRow(100 + i, i, 0, i, text) for i, text in enumerate(complex_texts)]
    simple_rows = [SentenceRow(200 + i, i, 0, i, text) for i, text in enumerate(simple_texts)]
    items = [ExportItem(simple_rows[s], complex_rows[c], label, "verified", [], {}, None, None) for c, s, label in links]
    return PairExport(1, "A", "adv", "A", "ele", complex_rows, simple_rows, complete, None, items)


def test_phenomena_follow_table_1_of_jiang_et_al() -> None:
    from annotation.export import simplification

    exported = _pair_export(
        ["Copied as is.", "Long one, split.", "First merged.", "Second merged.", "Fused a.", "Fused b.", "Dropped.", "Reworded here."],
        ["Copied  as is.", "Long one.", "Split.", "Merged.", "Fused x.", "Fused y.", "Said again."],
        [(0, 0, "aligned"), (1, 1, "aligned"), (1, 2, "partial"), (2, 3, "aligned"), (3, 3, "aligned"),
         (4, 4, "aligned"), (4, 5, "aligned"), (5, 5, "aligned"), (7, 6, "aligned"), (6, 6, "not_aligned")],
    )  # fmt: skip
    groups = simplification.pair_groups(exported)
    pairs = simplification.simplification_pairs(exported, groups)
    assert [(p.phenomenon, p.label) for p in pairs] == [
        ("copying", "aligned"),
        ("splitting", "partial"),
        ("merging", "aligned"),
        ("fusion", "aligned"),
        ("rephrasing", "aligned"),
    ]
    assert (pairs[2].complex, pairs[2].simple) == ("First merged. Second merged.", "Merged.")
    assert pairs[0].identical and pairs[0].bleu == 100.0 and pairs[0].gleu == 100.0
    counts = simplification.phenomena_counts(exported, groups, pairs)
    assert counts == {"copying": 1, "splitting": 1, "merging": 1, "fusion": 1, "rephrasing": 1, "deletion": 1}
    incomplete = _pair_export(["A.", "B."], ["A."], [(0, 0, "aligned")], complete=False)
    assert "deletion" not in simplification.phenomena_counts(incomplete, simplification.pair_groups(incomplete), [])
    assert simplification.keep(pairs[0], {"drop_identical": False}) and not simplification.keep(pairs[0], {"drop_identical": True})
    options = {"score_metric": "bleu", "score_min": 10.0, "score_max": 90.0}
    assert not simplification.keep(pairs[0], options)  # BLEU 100: a copy, above the seed's 0.9


def test_gleu_is_min_of_ngram_precision_and_recall() -> None:
    from annotation.export.simplification import sentence_gleu

    # 1-grams: 2 of 3 match; 2-grams: 1 of 2; 3-grams: 0 of 1 → 3 matches of 6 on both sides.
    assert sentence_gleu("a b c", "a b d") == pytest.approx(50.0)
    # Hypothesis "a b" (3 n-grams, all match) against "a b c d" (4 + 3 + 2 + 1 = 10): min(3/3, 3/10).
    assert sentence_gleu("a b", "a b c d") == pytest.approx(30.0)
    assert sentence_gleu("", "a") == 0.0


# --- the Exports page and the command ---


def test_exports_page_starts_a_job_shows_it_and_serves_its_files(gold_project, owner, client) -> None:
    project, _ = gold_project
    client.force_login(owner)
    url = f"/annotate/projects/{project.pk}/exports/"
    assert f'href="{url}"' in client.get(f"/annotate/projects/{project.pk}/").content.decode()
    page = client.get(url)
    assert page.status_code == 200 and b"No exports yet" in page.content
    form = {"formats": ["tsv", "parquet"], "seed": 3, "train": 0.5, "dev": 0.25, "test": 0.25, "score_metric": ""}
    assert client.post(url + "start/", form).status_code == 302
    job = ExportJob.objects.get()
    assert job.options["formats"] == ["tsv", "parquet"] and job.options["seed"] == 3 and job.options["fractions"]["train"] == 0.5
    card = client.get(f"{url}{job.pk}/").content.decode()
    assert "hx-trigger" in card and "waiting for a worker" in card
    export.export_job_execute(job_id=job.pk)
    card = client.get(f"{url}{job.pk}/").content.decode()
    assert "hx-trigger" not in card and "wiki-manual/train.tsv" in card and "Download all (zip)" in card
    download = client.get(f"{url}{job.pk}/files/wiki-manual/dev.tsv")
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment")
    assert b"".join(download.streaming_content) == (job.directory / "wiki-manual/dev.tsv").read_bytes()
    archive = client.get(f"{url}{job.pk}/files/export.zip")
    assert archive.status_code == 200 and f"export-{project.pk}-{job.pk}.zip" in archive["Content-Disposition"]
    assert client.get(f"{url}{job.pk}/files/../../secret_key").status_code == 404
    assert client.get(f"{url}{job.pk}/files/csv/train.csv").status_code == 404  # a format this job did not write


def test_exports_page_reports_bad_options_and_missing_gold(owner, client) -> None:
    project, _ = build_gold_project(owner, verify=False)
    client.force_login(owner)
    url = f"/annotate/projects/{project.pk}/exports/"
    form = {"formats": ["tsv"], "seed": 0, "train": 0.7, "dev": 0.15, "test": 0.15}
    page = client.post(url + "start/", form, follow=True).content.decode()
    assert "has nothing to export" in page
    page = client.post(url + "start/", {**form, "train": 0.9}, follow=True).content.decode()
    assert "fractions: train / dev / test must be &gt;= 0 and sum to 1" in page
    assert not ExportJob.objects.exists()


def test_exports_are_for_managers_only(gold_project, owner, outsider, client) -> None:
    from django.contrib.auth import get_user_model

    project, annotator = gold_project
    job = run_export(project, owner, formats="csv")
    viewer = get_user_model().objects.create_user("vera", password="vera-pass-123")
    services.membership_set(project=project, user=viewer, role="viewer")
    url = f"/annotate/projects/{project.pk}/exports/"
    form = {"formats": ["tsv"], "seed": 0, "train": 0.7, "dev": 0.15, "test": 0.15}
    for user, status in ((annotator, 403), (viewer, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == status
        assert client.post(url + "start/", form).status_code == status
        assert client.get(f"{url}{job.pk}/").status_code == status
        assert client.get(f"{url}{job.pk}/files/csv/train.csv").status_code == status
    client.force_login(viewer)
    detail = client.get(f"/annotate/projects/{project.pk}/").content.decode()
    assert "Agreement dashboard" in detail and "Exports</a>" not in detail
    assert ExportJob.objects.count() == 1


def test_export_command_writes_the_files_and_refuses_bad_input(gold_project, tmp_path) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    project, _ = gold_project
    out = StringIO()
    call_command("export", "--project", project.name, "--output", str(tmp_path / "out"), "--formats", "tsv,csv", "--seed", "1", stdout=out)
    printed = out.getvalue()
    assert str(tmp_path / "out" / "wiki-manual" / "train.tsv") in printed and "exported project 'Gold retraining'" in printed
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["README.md", "csv", "export.zip", "wiki-manual"]
    with pytest.raises(CommandError, match="exists and is not an empty folder"):
        call_command("export", "--project", project.name, "--output", str(tmp_path / "out"))
    with pytest.raises(CommandError, match=r"formats: unknown format\(s\) 'xls'"):
        call_command("export", "--project", project.name, "--output", str(tmp_path / "other"), "--formats", "xls")
    with pytest.raises(CommandError, match="no project named 'Nope'"):
        call_command("export", "--project", "Nope", "--output", str(tmp_path / "other"))
    assert not (tmp_path / "other").exists() and not list(tmp_path.glob(".other-staging-*"))


def test_parquet_is_written_in_row_groups_with_the_csv_rows(gold_project, owner, monkeypatch) -> None:
    from annotation.export import writers

    monkeypatch.setattr(writers, "ROW_GROUP_ROWS", 7)
    project, _ = gold_project
    job = run_export(project, owner, formats="csv,parquet")
    metadata = pq.read_metadata(job.directory / "parquet/train.parquet")
    assert metadata.num_rows == 48 and metadata.num_row_groups == 7  # 6 groups of 7 and one of 6
    table = pq.read_table(job.directory / "parquet/train.parquet").to_pylist()
    rows = list(csv.DictReader((job.directory / "csv/train.csv").open(encoding="utf-8")))
    assert [(r["simple_id"], r["complex_id"], r["label"], r["simple_sentence"]) for r in table] == [
        (r["simple_id"], r["complex_id"], r["label"], r["simple_sentence"]) for r in rows
    ]
    again = run_export(project, owner, formats="csv,parquet")
    assert (again.directory / "parquet/train.parquet").read_bytes() == (job.directory / "parquet/train.parquet").read_bytes()
