"""Retraining from a project's labels: snapshots, training jobs, the model registry, promotion, re-alignment."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings
from django.urls import reverse

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignmentRun, CandidateAlignment
from annotation import services
from annotation.models import (
    AnnotationProject,
    LabelEvent,
    ModelActivation,
    ModelVersion,
    TrainingJob,
)
from annotation.training import registry
from annotation.training import service as training
from annotation.training.snapshot import (
    TrainingDataError,
    snapshot_create,
    snapshot_gold_pairs,
)
from models_ml.aligning.calibration import calibration_read
from tests.annotation.gold_set import build_gold_project


@pytest.fixture(autouse=True)
def model_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)  # jobs run in-process below, no worker
    with override_settings(MODEL_DIR=tmp_path / "models"):
        yield tmp_path / "models"


@pytest.fixture
def gold_project(owner):
    return build_gold_project(owner)


def train_now(project: AnnotationProject, by, **options) -> TrainingJob:
    job = training.training_job_create(project=project, created_by=by, **{"epochs": 15, "lr": 0.1, **options})
    return training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu")


def test_snapshot_freezes_labels_counts_and_a_document_level_split(gold_project, owner) -> None:
    project, _ = gold_project
    snapshot = snapshot_create(project=project, seed=0, created_by=owner)
    assert snapshot.counts["pairs"] == {"train": 4, "dev": 1, "test": 1}
    assert snapshot.counts["labels"]["aligned"] == 24 and snapshot.counts["labels"]["not_aligned"] > 0
    assert sum(snapshot.counts["labels"].values()) == len(snapshot.items) == len(snapshot.label_event_ids)
    assert set(snapshot.splits) == {str(pk) for pk in project.pairs.values_list("pk", flat=True)}
    train_ids, test_ids = set(snapshot.pair_ids("train")), set(snapshot.pair_ids("test"))
    assert not train_ids & test_ids
    assert sum(len(p.groups) for p in snapshot_gold_pairs(snapshot, "train")) == 16  # 4 pairs x 4 one-to-one groups
    # Labels added later do not change a snapshot, and the next one keeps every pair's split.
    again = snapshot_create(project=project, seed=0, created_by=owner)
    assert again.splits == snapshot.splits


def test_too_few_labels_say_how_many_are_needed(owner) -> None:
    project, _ = build_gold_project(owner, labelled=2)
    with pytest.raises(TrainingDataError, match=r"needs at least 3 verified .* has 2 such document pair\(s\)"):
        training.training_job_create(project=project, created_by=owner)
    assert not TrainingJob.objects.exists()


def test_unverified_labels_do_not_count(owner) -> None:
    project, _ = build_gold_project(owner, verify=False)
    with pytest.raises(TrainingDataError, match="has 0 such document pair"):
        snapshot_create(project=project, created_by=owner)


@pytest.mark.parametrize("label", ["not_aligned", "aligned"])
def test_only_one_class_is_refused(owner, label) -> None:
    """All labels "not aligned": nothing to learn. Every sentence pair linked: no negatives, not even implicit ones."""
    project, annotator = build_gold_project(owner, labelled=0)
    for pair in project.pairs.order_by("pk")[:3]:
        simple = list(pair.simple_document.sentences.order_by("index"))
        complex_ = list(pair.complex_document.sentences.order_by("index"))
        for s in simple:
            for c in complex_ if label == "aligned" else complex_[:1]:
                services.label_record(project=project, annotator=annotator, pair=pair, simple_sentence_id=s.pk,
                                      complex_sentence_id=c.pk, label=label, expected_previous=None, source=LabelEvent.Source.IMPORT)  # fmt: skip
    expected = (
        "all 12 labels are 'not_aligned'"
        if label == "not_aligned"
        else "every one of the 48 sentence pairs of the 3 document pairs is linked"
    )
    with pytest.raises(TrainingDataError, match=f"only one class present: {expected}"):
        snapshot_create(project=project, created_by=owner)


def test_imported_positive_links_alone_train_with_implicit_negatives(owner) -> None:
    """Gold imported from DEplain has no "not aligned" rows: unlinked sentence pairs are the negatives."""
    project, annotator = build_gold_project(owner, labelled=0)
    for pair in project.pairs.order_by("pk"):
        simple = list(pair.simple_document.sentences.order_by("index"))
        complex_ = list(pair.complex_document.sentences.order_by("index"))
        for s, c in zip(simple, complex_):
            services.label_record(project=project, annotator=annotator, pair=pair, simple_sentence_id=s.pk,
                                  complex_sentence_id=c.pk, label="aligned", expected_previous=None, source=LabelEvent.Source.IMPORT)  # fmt: skip
    snapshot = snapshot_create(project=project, created_by=owner)
    assert snapshot.counts["labels"] == {"aligned": 24} and sum(snapshot.counts["pairs"].values()) == 6


def test_a_training_job_registers_a_version_with_metrics_progress_and_checksum(gold_project, owner, model_dir) -> None:
    project, _ = gold_project
    job = train_now(project, owner)
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    version = job.version
    assert version.number == 1 and version.snapshot_id == job.snapshot_id and version.created_by == owner
    assert Path(version.path) == model_dir / f"project-{project.pk}" / "v1" and Path(version.path, "crf.pt").is_file()
    assert [entry["epoch"] for entry in job.progress] == list(range(len(job.progress)))  # 0: the starting weights on dev
    assert all("dev_group_f1" in entry for entry in job.progress)
    assert "log_likelihood" not in job.progress[0] and all("log_likelihood" in entry for entry in job.progress[1:])
    for split in ("dev", "test"):
        for level in ("sentence", "group"):
            assert set(version.metrics[split][level]) == {"task1", "task2"}
    assert version.baseline["name"] == "the hand-calibrated aligner on jaccard"  # the gold project's suggestion run
    assert version.figure("test") > version.baseline["test"]["group"]["task1"]["f1"]  # learning helps on held-out documents
    assert registry.version_load(version).config.measure == "jaccard"
    assert not [p for p in (model_dir / f"project-{project.pk}").iterdir() if p.name.startswith(".staging")]
    # bulk accept's fallback: how often its suggestions on the held-out test documents were right, checksummed
    basis, answers = calibration_read(Path(version.path))
    calibrated = version.training["calibration"]
    assert f"snapshot {job.snapshot_id}, held out of training" in basis and len(answers) == calibrated["suggestions"] > 0
    assert sum(right for _, right in answers) == calibrated["right"]


@pytest.mark.slow
def test_training_is_deterministic_for_a_seed(gold_project, owner) -> None:
    project, _ = gold_project
    first, second = train_now(project, owner, seed=3), train_now(project, owner, seed=3)
    assert first.version.metrics == second.version.metrics
    assert first.progress == second.progress
    assert Path(first.version.path, "crf.pt").read_bytes() == Path(second.version.path, "crf.pt").read_bytes()


def test_a_cancelled_job_leaves_no_version_and_no_files(gold_project, owner, model_dir, monkeypatch) -> None:
    project, _ = gold_project
    job = training.training_job_create(project=project, created_by=owner, epochs=15)
    original = training._epoch_hook

    def cancelling_hook(job_id, entries):
        hook = original(job_id, entries)

        def on_epoch(report):
            if report.epoch == 2:
                TrainingJob.objects.filter(pk=job_id).update(cancel_requested=True)
            hook(report)

        return on_epoch

    monkeypatch.setattr(training, "_epoch_hook", cancelling_hook)
    job = training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu")
    assert job.status == TrainingJob.Status.CANCELLED and [entry["epoch"] for entry in job.progress] == [0, 1, 2]
    assert not ModelVersion.objects.exists()
    assert not list((model_dir / f"project-{project.pk}").glob("*")) if (model_dir / f"project-{project.pk}").exists() else True


def test_a_crash_while_saving_leaves_no_version_and_no_files(gold_project, owner, model_dir, monkeypatch) -> None:
    project, _ = gold_project
    job = training.training_job_create(project=project, created_by=owner, epochs=2)

    def broken_rename(self, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "rename", broken_rename)
    with pytest.raises(OSError):
        training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu")
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.FAILED and "No space left" in job.error
    assert not ModelVersion.objects.exists()
    assert list((model_dir / f"project-{project.pk}").iterdir()) == []


def test_a_queued_job_is_cancelled_at_once(gold_project, owner) -> None:
    project, _ = gold_project
    job = training.training_job_create(project=project, created_by=owner)
    assert training.training_job_cancel(job=job).status == TrainingJob.Status.CANCELLED
    assert training.training_job_execute(job_id=job.pk, build_measure=run_measure).status == TrainingJob.Status.CANCELLED


def test_promotion_realigns_and_the_new_suggestions_replace_the_old_without_touching_labels(gold_project, owner) -> None:
    project, _ = gold_project
    old_run = project.suggestion_run
    labels_before = list(LabelEvent.objects.order_by("pk").values_list("pk", "new_label", "source"))
    version = train_now(project, owner).version
    activation = registry.version_promote(version=version, by=owner, build_measure=run_measure)
    assert activation.action == ModelActivation.Action.PROMOTE and activation.previous is None
    project.refresh_from_db()
    assert project.active_model == version and project.pending_suggestion_run == activation.alignment_run
    assert project.suggestion_run == old_run  # until the re-alignment has finished
    run = aligning.alignment_run_execute(run_id=activation.alignment_run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED and version.path in run.config["model_dir"]
    project.refresh_from_db()
    assert project.suggestion_run == run and project.pending_suggestion_run is None
    new_links = CandidateAlignment.objects.filter(run=run).exclude(label="not_aligned").count()
    old_links = CandidateAlignment.objects.filter(run=old_run).exclude(label="not_aligned").count()
    assert new_links > old_links  # the trained model links paraphrases the untrained one left out
    assert list(LabelEvent.objects.order_by("pk").values_list("pk", "new_label", "source")) == labels_before


@pytest.mark.slow
def test_a_version_that_does_not_beat_the_active_one_needs_a_forced_promotion_with_a_reason(gold_project, owner, client) -> None:
    project, _ = gold_project
    good = train_now(project, owner).version
    registry.version_promote(version=good, by=owner, build_measure=run_measure)
    weak = train_now(project, owner, epochs=1, lr=0.001, base="untrained").version
    with pytest.raises(ValueError, match=r"does not beat the active model \(v1\) on the same 1 held-out test"):
        registry.version_promote(version=weak, by=owner, build_measure=run_measure)
    client.force_login(owner)  # a reason typed but the box left unticked: the page says which box forces it
    url = reverse("annotation:version_promote", args=[project.pk, weak.pk])
    answer = client.post(url, {"reason": "checking v2 by hand"}, follow=True).content.decode()
    assert "does not beat the active model" in answer and "You gave a reason but did not tick “even if not better”" in answer
    assert client.post(url, {}, follow=True).content.decode().count("You gave a reason") == 0  # no reason, no hint
    with pytest.raises(ValueError, match="needs a reason"):
        registry.version_promote(version=weak, by=owner, build_measure=run_measure, force=True)
    forced = registry.version_promote(version=weak, by=owner, build_measure=run_measure, force=True, reason="checking v2 by hand")
    assert forced.action == ModelActivation.Action.FORCE and forced.reason == "checking v2 by hand"
    assert forced.comparison["name"] == "v1"
    rollback = registry.version_rollback(project=project, by=owner)
    project.refresh_from_db()
    assert rollback.action == ModelActivation.Action.ROLLBACK and project.active_model == good


def test_a_corrupted_model_directory_is_refused_by_name(gold_project, owner) -> None:
    project, _ = gold_project
    version = train_now(project, owner).version
    with Path(version.path, "crf.pt").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(registry.ModelCorrupted, match=r"crf\.pt: checksum mismatch"):
        registry.version_promote(version=version, by=owner, build_measure=run_measure)
    project.refresh_from_db()
    assert project.active_model is None and not ModelActivation.objects.exists()
    Path(version.path, "checksums.json").write_text("{}")
    with pytest.raises(registry.ModelCorrupted, match="checksums.json: checksum mismatch with the registry"):
        registry.version_load(version)


@pytest.mark.slow
def test_models_page_trains_shows_progress_and_versions_and_promotes(gold_project, owner, client) -> None:
    project, _ = gold_project
    client.force_login(owner)
    url = f"/annotate/projects/{project.pk}/models/"
    page = client.get(url)
    assert page.status_code == 200 and b"Training data now" in page.content and b"No versions yet" in page.content
    response = client.post(url + "train/", {"base": "active", "epochs": 12, "lr": 0.1, "patience": 3, "seed": 0})
    assert response.status_code == 302
    job = TrainingJob.objects.get()
    assert "HX-Trigger" not in client.get(f"{url}jobs/{job.pk}/").headers  # queued: no version yet
    training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu")
    card = client.get(f"{url}jobs/{job.pk}/")
    assert b"Succeeded" in card.content and b"hx-trigger" not in card.content and b"Registered <strong>v1" in card.content
    assert card.headers["HX-Trigger"] == "versions-changed"  # the page then reloads its Versions table, no manual reload
    page = client.get(url).content.decode()
    assert 'id="version-1"' in page and "the hand-calibrated aligner on jaccard:" in page and "better" in page
    assert 'hx-trigger="versions-changed from:body" hx-select="#versions"' in page
    version = ModelVersion.objects.get()
    response = client.post(f"{url}{version.pk}/promote/", {})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.active_model == version and project.pending_suggestion_run is not None
    assert "re-aligning with v1 in" in client.get(url).content.decode()
    client.post(url + "rollback/")
    project.refresh_from_db()
    assert project.active_model is None


def test_models_page_refuses_annotators_and_outsiders_and_explains_missing_data(owner, outsider, client) -> None:
    project, annotator = build_gold_project(owner, labelled=1)
    url = f"/annotate/projects/{project.pk}/models/"
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    assert client.post(url + "train/", {"base": "active", "epochs": 3, "lr": 0.1, "patience": 2, "seed": 0}).status_code == 403
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "too few labels to train: needs at least 3 verified" in page and "disabled" in page
    response = client.post(url + "train/", {"base": "active", "epochs": 3, "lr": 0.1, "patience": 2, "seed": 0}, follow=True)
    assert "too few labels to train" in response.content.decode() and not TrainingJob.objects.exists()


@pytest.mark.slow
def test_manage_py_train_registers_a_version_and_reports_figures(gold_project, owner) -> None:
    from io import StringIO

    from django.core.management import call_command

    project, _ = gold_project
    out = StringIO()
    call_command("train", "--project", project.name, "--epochs", "12", "--lr", "0.1", "--promote", stdout=out)
    text = out.getvalue()
    assert "snapshot" in text and "epoch 1/12" in text and "v1 test: task1 sentence P/R/F1" in text
    assert "the hand-calibrated aligner on jaccard test (same documents)" in text and "promoted v1" in text
    project.refresh_from_db()
    assert project.active_model.number == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--project", "Nope"], "no annotation project named 'Nope'"),
        (["--project", "Gold retraining", "--epochs", "0"], "epochs must be >= 1"),
    ],
)
def test_manage_py_train_rejects_bad_arguments(gold_project, argv, message) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message):
        call_command("train", *argv)
    assert not TrainingJob.objects.exists()


@pytest.mark.slow
def test_a_job_can_also_fine_tune_the_cross_encoder_which_realignment_then_scores_with(gold_project, owner) -> None:
    project, _ = gold_project
    job = train_now(project, owner, epochs=5, pair_classifier=True, pair_classifier_epochs=1)
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    version = job.version
    assert [e["model"] for e in job.progress].count("pair classifier") == 1 and "dev_pair_f1" in job.progress[-1]
    assert set(version.metrics["pair_classifier"]) == {"dev", "test"} and version.metrics["pair_classifier"]["test"]["examples"] > 0
    assert Path(version.path, "pair_classifier", "pair_classifier.pt").is_file()
    activation = registry.version_promote(version=version, by=owner, build_measure=run_measure, force=True, reason="cross-encoder check")
    run = aligning.alignment_run_execute(run_id=activation.alignment_run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    assert "cross_encoder" in run.measures and run.config["cross_encoder_dir"].endswith("pair_classifier")
    scores = CandidateAlignment.objects.filter(run=run).values_list("scores", flat=True)
    assert scores and all(0.0 <= s["cross_encoder"] <= 1.0 for s in scores)
    with Path(version.path, "pair_classifier", "pair_classifier.pt").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(registry.ModelCorrupted, match=r"pair_classifier\.pt: checksum mismatch"):
        registry.version_load(version)


def _write_gold_deplain(folder: Path, domains: tuple[str, ...] = ("",)) -> Path:
    from models_ml.data.io import AlignmentGroup, GoldPair
    from tests.annotation.gold_set import ARTICLES
    from tests.models_ml.aligning.test_train import write_deplain

    pairs = [
        GoldPair(
            title, complex_, simple, [AlignmentGroup(complex=(k,), simple=(k,)) for k in range(4)], None, None,
            domain=domains[number % len(domains)],
        )
        for number, (title, (complex_, simple)) in enumerate(ARTICLES.items())
    ]  # fmt: skip
    return write_deplain(folder, pairs)


def test_versions_are_scored_per_domain_and_the_models_page_shows_it(owner, tmp_path, client) -> None:
    from django.core.management import call_command
    from django.urls import reverse

    folder = _write_gold_deplain(tmp_path / "deplain", domains=("news", "fiction"))
    call_command("import_gold", "--gold", str(folder), "--format", "deplain", "--project", "Two domains", "--user", "owner")
    project = AnnotationProject.objects.get(name="Two domains")
    job = train_now(project, owner)
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    version = job.version
    test_domains = {pair.domain for pair in snapshot_gold_pairs(version.snapshot, "test")}
    assert test_domains and test_domains <= {"news", "fiction"}
    assert set(version.metrics["test_by_domain"]) == test_domains == set(version.baseline["test_by_domain"])
    client.force_login(owner)
    page = client.get(reverse("annotation:project_models", args=[project.pk])).content.decode()
    assert f'aria-label="Test group F1 of {version} per domain"' in page and all(f"<th>{d}</th>" in page for d in test_domains)


def test_a_version_better_overall_but_worse_on_a_domain_does_not_beat_the_active_one() -> None:
    def report(f1: float) -> dict:
        return {"group": {"task1": {"f1": f1}}}

    ours = {"test": report(0.8), "test_by_domain": {"bible": report(0.9), "fiction": report(0.3)}}
    theirs = {"test": report(0.7), "test_by_domain": {"bible": report(0.6), "fiction": report(0.4)}}
    assert registry.comparison_losses(ours, theirs) == ["fiction: group F1 0.300 vs 0.400"]
    assert registry.comparison_losses({**ours, "test_by_domain": {}}, theirs) == []  # no domains: overall only
    assert registry.comparison_losses(theirs, ours) == ["test group F1 0.700 vs 0.800", "bible: group F1 0.600 vs 0.900"]


def test_imported_deplain_gold_is_a_pre_labelled_project_that_trains(owner, tmp_path) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("import_gold", "--gold", str(_write_gold_deplain(tmp_path / "deplain")), "--format", "deplain",
                 "--project", "Imported gold", "--user", "owner", stdout=out)  # fmt: skip
    assert "imported 6 document pairs with 24 gold links" in out.getvalue()
    project = AnnotationProject.objects.get(name="Imported gold")
    assert set(LabelEvent.objects.filter(project=project).values_list("source", "new_label")) == {("import", "aligned")}
    job = train_now(project, owner)
    assert job.status == TrainingJob.Status.SUCCEEDED and sum(job.snapshot.counts["pairs"].values()) == 6


def test_import_gold_refuses_bad_input_and_writes_nothing(owner, tmp_path, gold_project) -> None:
    from django.core.management import CommandError, call_command

    gold = _write_gold_deplain(tmp_path / "deplain")
    before = (AnnotationProject.objects.count(), LabelEvent.objects.count())
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_gold", "--gold", str(tmp_path / "missing"), "--format", "deplain", "--project", "X", "--user", "owner")
    with pytest.raises(CommandError, match="a project named 'Gold retraining' exists already"):
        call_command("import_gold", "--gold", str(gold), "--format", "deplain", "--project", "Gold retraining", "--user", "owner")
    with pytest.raises(CommandError, match="corpus 'Gold articles' exists and has documents"):
        call_command(
            "import_gold", "--gold", str(gold), "--format", "deplain", "--project", "New", "--corpus", "Gold articles", "--user", "owner"
        )
    assert (AnnotationProject.objects.count(), LabelEvent.objects.count()) == before


@pytest.mark.slow
def test_a_project_on_the_default_model_fine_tunes_its_learned_scorer_and_falls_back_to_it(gold_project, owner) -> None:
    import json

    import numpy as np
    from django.conf import settings

    project, _ = gold_project
    run = aligning.alignment_run_create(corpus=project.corpus, model_dir=settings.ALIGNER_MODEL_DIR)
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=run)
    project.refresh_from_db()
    base = registry.untrained_aligner(project, device="cpu")
    shipped = json.loads((Path(settings.ALIGNER_MODEL_DIR) / "config.json").read_text())
    assert base.config.measure == "learned" and base.config.scorer == shipped["scorer"]
    job = train_now(project, owner)
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    version = ModelVersion.objects.get(project=project)
    tuned = version.config["scorer"]
    assert version.config["measure"] == "learned" and tuned["features"] == shipped["scorer"]["features"]
    assert not np.allclose(tuned["weights"], shipped["scorer"]["weights"])  # fine-tuned on the project's labels ...
    assert np.corrcoef(tuned["weights"], shipped["scorer"]["weights"])[0, 1] > 0.5  # ... from the shipped model
    assert version.baseline["name"] == "the shipped default model"  # compared with it on the same test documents
    realigned = registry.realign(project, None, owner)
    assert realigned is not None and realigned.config["model_dir"] == settings.ALIGNER_MODEL_DIR
