"""Automatic adaptation: a finished pair queues one job that adapts the active model to the finished pairs and,
when a fine-tuned copy wins, re-suggests only the pairs nobody has started."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings
from django.utils.html import escape

from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.models import AlignedPair, AlignmentRun, CandidateAlignment
from annotation import services
from annotation.models import AdaptationJob, AnnotationProject, Assignment, LabelEvent, ModelActivation, ModelVersion, TrainingSnapshot
from annotation.training import registry
from annotation.training import service as training
from annotation.training.adaptation import ADAPT_TASK, adaptation_job_execute, adaptation_queue
from annotation.training.snapshot import finished_snapshot
from models_ml.aligning import adapt
from models_ml.data.splits import assign_splits
from tests.annotation.gold_set import build_gold_project, label_pair_as_gold


@pytest.fixture(autouse=True)
def deferred(tmp_path: Path, monkeypatch) -> list[str]:
    """Jobs run in-process below, no worker; the names of the tasks queued are recorded."""
    queued: list[str] = []
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda task_name, *args, **kwargs: queued.append(task_name))
    with override_settings(MODEL_DIR=tmp_path / "models", AUTO_ADAPT_EPOCHS=1):
        yield queued


def with_active_version(project: AnnotationProject, owner, *, epochs: int, lr: float, seed: int = 0) -> ModelVersion:
    """Train v1 from the untrained aligner on the verified pairs and make it the active model."""
    job = training.training_job_create(project=project, created_by=owner, epochs=epochs, lr=lr, base="untrained", seed=seed)
    version = training.training_job_execute(job_id=job.pk, build_measure=run_measure, device="cpu").version
    AnnotationProject.objects.filter(pk=project.pk).update(active_model=version)
    return version


def seed_training_on(verified: list, pair) -> int:
    """A snapshot seed whose document-level split puts ``pair`` in train. The split hashes pair ids, and which ids a
    test's pairs get depends on what ran before it in the database (under xdist, on which tests its worker had)."""
    keys = sorted((str(p.pk) for p in verified), key=int)
    return next(seed for seed in range(1000) if assign_splits(keys, seed=seed)[str(pair.pk)] == "train")


def adapt_now(project: AnnotationProject, pair, by) -> AdaptationJob:
    job = adaptation_queue(project=project, pair=pair, by=by)
    return adaptation_job_execute(job_id=job.pk, device="cpu")


def suggestions(run: AlignmentRun, pair) -> list[tuple]:
    rows = CandidateAlignment.objects.filter(run=run, pair=pair).order_by("simple_sentence_id", "complex_sentence_id")
    return list(rows.values_list("simple_sentence_id", "complex_sentence_id", "label", "score", "crf_marginal", "group_index"))


def label_one(project, annotator, pair) -> None:
    """Start a pair: one label, not marked done."""
    simple = pair.simple_document.sentences.order_by("index").first()
    complex_ = pair.complex_document.sentences.order_by("index").first()
    services.label_record(project=project, annotator=annotator, pair=pair, simple_sentence_id=simple.pk,
                          complex_sentence_id=complex_.pk, label="aligned", expected_previous=None)  # fmt: skip


def test_finishing_pairs_queues_one_adaptation_while_one_waits(owner, client, deferred, django_capture_on_commit_callbacks) -> None:
    project, annotator = build_gold_project(owner, labelled=0)
    pairs = list(project.pairs.order_by("pk"))
    client.force_login(annotator)

    def finish(pair):
        with django_capture_on_commit_callbacks(execute=True):  # the task is queued once the finish commits
            response = client.post(f"/annotate/projects/{project.pk}/pairs/{pair.pk}/done/", HTTP_ACCEPT="application/json")
        assert response.status_code == 200 and response.json()["done"]

    finish(pairs[0])
    finish(pairs[1])
    job = AdaptationJob.objects.get()
    assert job.status == AdaptationJob.Status.QUEUED and job.after_pair == pairs[1] and job.created_by == annotator
    assert deferred == [ADAPT_TASK]
    job.mark_running()  # a running job has read its pairs: the next finish queues another
    finish(pairs[2])
    assert AdaptationJob.objects.count() == 2 and deferred == [ADAPT_TASK, ADAPT_TASK]
    with override_settings(AUTO_ADAPT=False):
        finish(pairs[3])
    assert AdaptationJob.objects.count() == 2 and len(deferred) == 2


@pytest.mark.slow
def test_an_adapted_copy_becomes_an_automatic_version_and_re_suggests_only_unstarted_pairs(owner, client) -> None:
    project, annotator = build_gold_project(owner, labelled=3)
    pairs = list(project.pairs.order_by("pk"))
    weak = with_active_version(project, owner, epochs=1, lr=0.001)
    label_one(project, annotator, pairs[3])  # in progress
    old_run = project.suggestion_run
    before = {pair.pk: suggestions(old_run, pair) for pair in pairs}
    job = adapt_now(project, pairs[2], annotator)
    assert job.status == AdaptationJob.Status.SUCCEEDED and job.outcome == AdaptationJob.Outcome.ADAPTED, (job.error, job.reason)
    assert job.reason.startswith(f"Automatic adaptation after {pairs[2]}: fine-tuned (scorer prior")
    assert "on 3 labelled pairs, each held out in turn" in job.reason and job.figures["start"][0] < 1
    version = job.version
    assert version.automatic and version.automatic_reason == job.reason and version.number == 2
    assert sorted(version.snapshot.splits) == sorted(str(pair.pk) for pair in pairs[:3])  # the finished pairs, not pair 4
    project.refresh_from_db()
    activation = ModelActivation.objects.get(version=version)
    assert project.active_model == version and activation.action == ModelActivation.Action.AUTOMATIC and activation.previous == weak
    run = job.alignment_run
    assert activation.alignment_run == run == project.pending_suggestion_run and project.suggestion_run == old_run
    assert set(run.pairs.all()) == {pairs[4], pairs[5]} and run.config["model_dir"] == version.path
    label_one(project, annotator, pairs[4])  # started while the run works: it keeps what it showed
    labels = list(LabelEvent.objects.order_by("pk").values_list("pk", "pair_id", "new_label", "source"))
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == AlignmentRun.Status.SUCCEEDED, run.error
    project.refresh_from_db()
    assert project.suggestion_run == run and project.pending_suggestion_run is None
    for pair in pairs[:5]:
        assert suggestions(run, pair) == before[pair.pk], pair
        assert AlignedPair.objects.get(run=run, pair=pair).viterbi == AlignedPair.objects.get(run=old_run, pair=pair).viterbi
    assert suggestions(run, pairs[5]) and suggestions(run, pairs[5]) != before[pairs[5].pk]  # the adapted model's
    assert {pair.pk: suggestions(old_run, pair) for pair in pairs} == before  # the old run as it was
    run.refresh_from_db()
    assert run.pairs_done == run.pairs_total == 6 and run.candidates_written == CandidateAlignment.objects.filter(run=run).count()
    assert list(LabelEvent.objects.order_by("pk").values_list("pk", "pair_id", "new_label", "source")) == labels
    assert run.config["kept_from"] == {str(pair.pk): old_run.pk for pair in pairs[:5]}  # whose model made the copied rows
    later = LabelEvent.objects.filter(pair=pairs[4]).first()
    services.label_record(project=project, annotator=annotator, pair=pairs[4], simple_sentence_id=later.simple_sentence_id,
                          complex_sentence_id=later.complex_sentence_id, label="partial", expected_previous=later.pk)  # fmt: skip
    cited = LabelEvent.objects.filter(pair=pairs[4]).last()
    assert cited.suggestion_run == old_run and cited.suggestion["run_id"] == old_run.pk  # what the screen showed, not the new model
    client.force_login(owner)
    page = client.get(f"/annotate/projects/{project.pk}/models/").content.decode()
    assert 'id="version-2" class="active"' in page and "automatic</span>" in page and escape(job.reason) in page
    assert "automatic adaptation" in page  # the version's maker and its activation in the history
    listed = client.get(f"/api/projects/{project.pk}/model-versions/").json()["results"]
    assert [(v["name"], v["automatic"], v["automatic_reason"]) for v in listed] == [("v2", True, job.reason), ("v1", False, "")]
    registry.version_rollback(project=project, by=owner)  # back to v1, as after any promotion
    with pytest.raises(ValueError, match=r"v2 was adapted automatically, .* has no held-out test figures .* force the promotion"):
        registry.version_promote(version=version, by=owner, build_measure=run_measure)
    forced = registry.version_promote(version=version, by=owner, build_measure=run_measure, force=True, reason="the adapted one")
    assert forced.action == ModelActivation.Action.FORCE and forced.previous == weak


@pytest.mark.slow
def test_when_no_copy_beats_the_active_model_it_stays_and_the_models_page_says_why(owner, client) -> None:
    project, annotator = build_gold_project(owner, labelled=3)
    pairs = list(project.pairs.order_by("pk"))
    # Trained on the first pair, it links every gold pair: no copy can do better (trained on the third, it does not).
    strong = with_active_version(project, owner, epochs=15, lr=0.1, seed=seed_training_on(pairs[:3], pairs[0]))
    old_run = project.suggestion_run
    job = adapt_now(project, pairs[2], annotator)
    assert job.status == AdaptationJob.Status.SUCCEEDED and job.outcome == AdaptationJob.Outcome.KEPT, (job.error, job.reason)
    assert job.reason == (
        f"Automatic adaptation after {pairs[2]}: kept the current model: no fine-tuned copy beat it on 3 labelled pairs, "
        f"each held out in turn (best group F1 1.000 against 1.000)"
    )
    assert list(ModelVersion.objects.all()) == [strong] and not ModelActivation.objects.exists()
    assert list(TrainingSnapshot.objects.all()) == [strong.snapshot]  # what it judged on is kept only with a version
    project.refresh_from_db()
    assert project.active_model == strong and project.suggestion_run == old_run and project.pending_suggestion_run is None
    client.force_login(owner)
    page = client.get(f"/annotate/projects/{project.pk}/models/").content.decode()
    assert "kept the current model: no fine-tuned copy beat it on 3 labelled pairs" in page and "automatic</span>" not in page


def test_the_hand_calibrated_aligner_is_not_adapted_and_the_record_says_so(owner) -> None:
    project, annotator = build_gold_project(owner, labelled=3)
    job = adapt_now(project, project.pairs.first(), annotator)
    assert job.status == AdaptationJob.Status.SUCCEEDED and job.outcome == AdaptationJob.Outcome.NOT_ADAPTED
    assert "not adapted: the project's model is the hand-calibrated aligner on jaccard, which has no trained weights" in job.reason
    assert not ModelVersion.objects.exists() and not TrainingSnapshot.objects.exists()


def test_without_finished_labelled_pairs_nothing_is_adapted_and_the_record_says_so(owner) -> None:
    project, annotator = build_gold_project(owner, labelled=0)
    AnnotationProject.objects.filter(pk=project.pk).update(suggestion_run=None)  # the shipped default model: learned
    job = adapt_now(project, project.pairs.first(), annotator)
    assert job.status == AdaptationJob.Status.SUCCEEDED and job.outcome == AdaptationJob.Outcome.NOT_ADAPTED, job.error
    assert "not adapted: no finished pair of project 'Gold retraining' has settled labels yet" in job.reason
    assert not ModelVersion.objects.exists() and not TrainingSnapshot.objects.exists()


def test_finished_pairs_count_once_every_annotator_is_done_and_agrees(owner, django_user_model) -> None:
    """Unverified pairs count when finished; a pair someone still works on, or with a disagreement, waits."""
    project, annotator = build_gold_project(owner, labelled=3, verify=False)
    pairs = list(project.pairs.order_by("pk"))
    other = django_user_model.objects.create_user("otto", password="otto-pass-123")
    services.membership_set(project=project, user=other, role="annotator")
    for pair in pairs[:2]:
        Assignment.objects.create(project=project, pair=pair, annotator=other)
    label_pair_as_gold(project, other, pairs[1])  # agrees with gina on every item, and is done
    snapshot = finished_snapshot(project)
    assert sorted(snapshot.splits) == sorted(str(pair.pk) for pair in pairs[1:3])  # pair 1: otto is still working on it
    assert {item[0] for item in snapshot.items} == {pairs[1].pk, pairs[2].pk} and snapshot.counts["labels"]["aligned"] == 8
    label_one(project, other, pairs[0])  # one link, then done: his unlabelled items count as not aligned, which gina linked
    services.assignment_complete(project=project, annotator=other, pair=pairs[0])
    assert sorted(finished_snapshot(project).splits) == sorted(str(pair.pk) for pair in pairs[1:3])


@pytest.mark.slow
def test_a_promotion_while_it_adapts_stands_and_the_record_says_so(owner, monkeypatch) -> None:
    project, annotator = build_gold_project(owner, labelled=3)
    weak = with_active_version(project, owner, epochs=1, lr=0.001)

    def adapt_then_roll_back(*args, **kwargs):
        answer = real_adapt(*args, **kwargs)
        AnnotationProject.objects.filter(pk=project.pk).update(active_model=None)  # a manager's rollback meanwhile
        return answer

    real_adapt = adapt.adapt_aligner
    monkeypatch.setattr(adapt, "adapt_aligner", adapt_then_roll_back)  # the job imports it when it runs
    job = adapt_now(project, project.pairs.first(), annotator)
    assert job.outcome == AdaptationJob.Outcome.NOT_ADAPTED, (job.error, job.reason)
    assert f"not adapted: the active model changed from {weak} while it adapted" in job.reason
    assert list(ModelVersion.objects.all()) == [weak] and not ModelActivation.objects.exists()
    project.refresh_from_db()
    assert project.active_model is None and project.pending_suggestion_run is None
    assert not [p for p in (Path(weak.path).parent).iterdir() if p.name != "v1"]  # no staging folder, no v2
