"""The model registry: loading a version (checksums checked), comparing, promoting, rolling back, re-aligning.

Promotion needs the candidate to beat the active version (or, when none is active, the base
aligner, :func:`base_aligner_name`: the shipped default model or the hand-calibrated aligner) in
group-level Task-1 F1 on the *same* held-out documents: the candidate's test documents, which the
sticky splits keep out of every training set of the project. A manager
may force a promotion; the reason is recorded. After any change of the active version the
project's document pairs are re-aligned in the background with it; the new run becomes the
project's suggestion run when it succeeds (``annotation.apps`` connects that). Human labels
are label events and are never touched by any of this.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from alignment.aligning.model_names import model_label
from alignment.aligning.service import alignment_run_create
from alignment.errors import ServiceError
from alignment.models import AlignmentRun
from annotation.models import AnnotationProject
from annotation.training.models import ModelActivation, ModelVersion
from annotation.training.snapshot import snapshot_gold_pairs
from models_ml.aligning.aligner_config import LEARNED, AlignerConfig
from models_ml.data.checkpoint import CHECKSUMS, CLASSIFIER_FILES, sha256, verify_checksums
from models_ml.data.evaluate import EvaluationReport
from models_ml.data.io import GoldPair

if TYPE_CHECKING:  # the aligner brings torch: imported where a model is loaded or scored, not by every page that names one
    from models_ml.aligning.aligner import Aligner

MeasureBuilder = Callable[[str, "Aligner"], object]


class ModelCorrupted(ValueError):
    """A version's files do not match the checksum recorded when it was registered."""


def version_load(version: ModelVersion, *, device: str = "") -> Aligner:
    """The version's aligner; ModelCorrupted naming the file when anything on disk changed."""
    directory = Path(version.path)
    checksums = directory / CHECKSUMS
    if not checksums.is_file():
        raise ModelCorrupted(f"{checksums}: missing; model {version} of project {version.project_id} cannot be loaded")
    if sha256(checksums) != version.checksum:
        raise ModelCorrupted(f"{checksums}: checksum mismatch with the registry; model {version} was altered on disk")
    expected = version.training.get("pair_classifier_checksum")
    if expected:
        classifier = directory / "pair_classifier" / CHECKSUMS
        if not classifier.is_file() or sha256(classifier) != expected:
            raise ModelCorrupted(f"{classifier}: missing or checksum mismatch with the registry; model {version} was altered on disk")
        try:
            verify_checksums(classifier.parent, CLASSIFIER_FILES, "pair-classifier")
        except ValueError as error:
            raise ModelCorrupted(str(error)) from None
    try:
        from models_ml.aligning.aligner import Aligner

        return Aligner.load(directory, device=device or None)
    except ValueError as error:
        raise ModelCorrupted(str(error)) from None


def base_model_dir(project: AnnotationProject) -> str:
    """The configured default model (ALIGNER_MODEL_DIR) when the project's suggestions come from it (or it has
    none yet), else "": then the base is the suggestion run's measure and settings, untrained."""
    run = project.suggestion_run
    if not settings.ALIGNER_MODEL_DIR or not Path(settings.ALIGNER_MODEL_DIR).is_dir():
        return ""
    if run is not None and run.config["aligner"].get("measure") != LEARNED:
        return ""
    return settings.ALIGNER_MODEL_DIR


def untrained_aligner(project: AnnotationProject, *, device: str = "") -> Aligner:
    """The aligner a project has before any version of its own: the configured default model (see
    :func:`base_model_dir`), else its suggestion run's settings without trained weights, else the defaults."""
    from models_ml.aligning.aligner import Aligner

    directory = base_model_dir(project)
    if directory:
        try:
            return Aligner.load(directory, device=device or None)
        except ValueError as error:
            raise ModelCorrupted(str(error)) from None
    run = project.suggestion_run
    settings_ = dict(run.config["aligner"]) if run is not None else {}
    if device:
        settings_["device"] = device
    return Aligner(AlignerConfig.from_dict(settings_) if settings_ else AlignerConfig(device=device))


def active_aligner(project: AnnotationProject, *, device: str = "") -> tuple[Aligner, str]:
    """(aligner, name) of the project's active version, or of the untrained aligner."""
    if project.active_model is not None:
        return version_load(project.active_model, device=device), str(project.active_model)
    return untrained_aligner(project, device=device), base_aligner_name(project)


def base_aligner_name(project: AnnotationProject) -> str:
    """How pages and reports name the aligner of :func:`untrained_aligner`, in :func:`model_label`'s vocabulary:
    the shipped default model, or the hand-calibrated aligner on the suggestion run's measure."""
    directory = base_model_dir(project)
    run = project.suggestion_run
    aligner = (run.config.get("aligner") or {}) if run is not None and not directory else {}
    return model_label(model_dir=directory, measure=str(aligner.get("measure") or ""), encoder=str(aligner.get("encoder") or ""))


def version_name(project: AnnotationProject, version: ModelVersion | None) -> str:
    """A version's name ("v3"), or for None (before any promotion, or rolled back to the start) the base aligner's."""
    return model_label(version=version.number) if version is not None else base_aligner_name(project)


class SimilarityCache:
    """Each measure's (m, n) matrix per gold pair, computed once per training job or comparison."""

    def __init__(self, build_measure: MeasureBuilder) -> None:
        self.build_measure = build_measure
        self.matrices: dict[tuple[str, str], np.ndarray] = {}

    def __call__(self, aligner: Aligner, pairs: list[GoldPair]) -> list[np.ndarray]:
        name = aligner.config.measure
        if aligner.config.scorer is not None:  # learned scorers differ by their parameters, not their name
            name += ":" + hashlib.sha256(json.dumps(aligner.config.scorer, sort_keys=True).encode()).hexdigest()
        missing = [p for p in pairs if (name, p.pair_id) not in self.matrices]
        if missing:
            measure = self.build_measure(aligner.config.measure, aligner)
            for pair in missing:
                m, n = len(pair.simple_sentences), len(pair.complex_sentences)
                matrix = measure.score(pair.simple_sentences, pair.complex_sentences) if m and n else np.zeros((m, n), np.float32)
                self.matrices[(name, pair.pair_id)] = np.asarray(matrix, dtype=np.float32)  # (m, n)
        return [self.matrices[(name, p.pair_id)] for p in pairs]


def evaluate_on(aligner: Aligner, pairs: list[GoldPair], similarities: SimilarityCache) -> EvaluationReport:
    from models_ml.aligning.train import evaluate_aligner

    return evaluate_aligner(aligner, pairs, similarities(aligner, pairs))


def evaluate_test(aligner: Aligner, pairs: list[GoldPair], similarities: SimilarityCache) -> dict[str, dict]:
    """{"test": report, "test_by_domain": {domain: report}} with each pair decoded once; by domain is {} when
    no pair names one (gold import records DEplain's)."""
    from models_ml.aligning.train import evaluate_aligner

    if not pairs:
        raise ValueError("evaluate_test needs at least one gold document pair")
    matrices = similarities(aligner, pairs)
    reports = [evaluate_aligner(aligner, [pair], [matrix]) for pair, matrix in zip(pairs, matrices, strict=True)]
    by_domain: dict[str, EvaluationReport] = {}
    for pair, report in zip(pairs, reports, strict=True):
        key = pair.domain or "(none)"
        by_domain[key] = by_domain[key] + report if key in by_domain else report
    test = sum(reports[1:], reports[0])
    named = any(pair.domain for pair in pairs)
    return {"test": test.as_dict(), "test_by_domain": {k: by_domain[k].as_dict() for k in sorted(by_domain)} if named else {}}


def group_f1(report: dict) -> float:
    return float(report["group"]["task1"]["f1"])


def comparison_losses(ours: dict, theirs: dict) -> list[str]:
    """Why a version with figures ``ours`` does not beat ``theirs`` (both {"test": report, "test_by_domain": ...}).

    It must have the higher group F1 on the test documents and be no worse on any domain both were
    scored on: a version that wins overall while losing the new domain's documents is not promoted.
    """
    losses = []
    if group_f1(ours["test"]) <= group_f1(theirs["test"]):
        losses.append(f"test group F1 {group_f1(ours['test']):.3f} vs {group_f1(theirs['test']):.3f}")
    by_ours, by_theirs = ours.get("test_by_domain") or {}, theirs.get("test_by_domain") or {}
    for domain in sorted(by_ours.keys() & by_theirs.keys()):
        if group_f1(by_ours[domain]) < group_f1(by_theirs[domain]):
            losses.append(f"{domain}: group F1 {group_f1(by_ours[domain]):.3f} vs {group_f1(by_theirs[domain]):.3f}")
    return losses


def version_compare(version: ModelVersion, *, build_measure: MeasureBuilder, device: str = "") -> dict:
    """The version and the project's active aligner on the version's test documents: both reports and who wins."""
    project = AnnotationProject.objects.select_related("active_model", "suggestion_run").get(pk=version.project_id)
    pairs = snapshot_gold_pairs(version.snapshot, "test")
    if not pairs:
        raise ValueError(f"{version} has no test documents to compare on")
    cache = SimilarityCache(build_measure)
    against, name = active_aligner(project, device=device)
    theirs = evaluate_test(against, pairs, cache)
    losses = comparison_losses(version.metrics, theirs)
    return {"version": project.active_model_id, "name": name, **theirs, "documents": len(pairs), "beats": not losses, "losses": losses}


def _stored_comparison(version: ModelVersion, project: AnnotationProject) -> dict | None:
    baseline = version.baseline or {}
    if "test" in baseline and baseline.get("version") == project.active_model_id:
        losses = comparison_losses(version.metrics, baseline)
        return {**baseline, "beats": not losses, "losses": losses}
    return None


def realign(
    project: AnnotationProject, version: ModelVersion | None, by: AbstractBaseUser | None, *, pair_ids: set[int] | None = None
) -> AlignmentRun | None:
    """Queue a run over the project's pairs (or those of ``pair_ids``) with ``version`` (None: untrained) and mark it pending."""
    pairs = list(project.pairs.all() if pair_ids is None else project.pairs.filter(pk__in=pair_ids))
    if not pairs:
        return None
    suggestion = project.suggestion_run
    measures = suggestion.config.get("measures") if suggestion is not None else None
    aligner_config = dict(suggestion.config["aligner"]) if suggestion is not None else None
    if aligner_config is not None:
        aligner_config.pop("crf", None)  # a saved model keeps its own CRF shape
    model_dir = version.path if version else base_model_dir(project)
    run = alignment_run_create(
        corpus=project.corpus, pairs=pairs, created_by=by, measures=measures,
        aligner_config=aligner_config if not model_dir else None, model_dir=model_dir,
    )  # fmt: skip
    AnnotationProject.objects.filter(pk=project.pk).update(pending_suggestion_run=run)
    return run


def _comparison(version: ModelVersion, project: AnnotationProject, build_measure: MeasureBuilder, device: str) -> dict:
    """:func:`version_compare`, except for a version adapted automatically from every finished pair: it has no
    held-out test figures (its pairs were judged leave-one-out), so only a forced promotion brings it back."""
    if version.automatic and "test" not in version.metrics:
        name = version_name(project, project.active_model)
        return {
            "version": project.active_model_id,
            "name": name,
            "beats": False,
            "losses": ["adapted automatically: no held-out test figures"],
        }
    return version_compare(version, build_measure=build_measure, device=device)


def version_promote(
    *, version: ModelVersion, by: AbstractBaseUser, build_measure: MeasureBuilder, force: bool = False, reason: str = "",
    device: str = "",
) -> ModelActivation:  # fmt: skip
    """Make ``version`` the project's active model and re-align; ValueError when it does not beat the active one."""
    project = AnnotationProject.objects.select_related("active_model", "suggestion_run").get(pk=version.project_id)
    if project.active_model_id == version.pk:
        raise ValueError(f"{version} is already the active model of {project}")
    version_load(version, device=device)  # refuse a corrupted model before anything changes
    comparison = _stored_comparison(version, project) or _comparison(version, project, build_measure, device)
    if not comparison["beats"] and not force and version.automatic and "test" not in version.metrics:
        raise ValueError(
            f"{version} was adapted automatically, judged leave-one-pair-out on the finished pairs, and has no held-out test "
            f"figures to compare with the active model ({comparison['name']}). A manager may force the promotion with a reason."
        )
    if not comparison["beats"] and not force:
        raise ValueError(
            f"{version} does not beat the active model ({comparison['name']}) on the same {version.snapshot.counts['pairs']['test']} "
            f"held-out test document pair(s): {'; '.join(comparison['losses'])}. A manager may force the promotion with a reason."
        )
    if force and not reason.strip():
        raise ServiceError("a forced promotion needs a reason", field="reason")
    action = ModelActivation.Action.PROMOTE if comparison["beats"] else ModelActivation.Action.FORCE
    return _activate(project, version, by, action, reason if force else "", comparison)


def version_rollback(*, project: AnnotationProject, by: AbstractBaseUser) -> ModelActivation:
    """Return to the model that was active before the current one (the base aligner, :func:`base_aligner_name`, at the start)."""
    project = AnnotationProject.objects.select_related("active_model", "suggestion_run").get(pk=project.pk)
    last = ModelActivation.objects.filter(project=project).order_by("-pk").first()
    if last is None or last.version_id != project.active_model_id:
        raise ValueError(f"{project} has no promotion to roll back")
    target = last.previous
    if target is not None:
        version_load(target)
    return _activate(project, target, by, ModelActivation.Action.ROLLBACK, f"rollback of {version_name(project, last.version)}", {})


def _activate(
    project: AnnotationProject, version: ModelVersion | None, by: AbstractBaseUser, action: str, reason: str, comparison: dict
) -> ModelActivation:
    with transaction.atomic():
        locked = AnnotationProject.objects.select_for_update().get(pk=project.pk)
        activation = ModelActivation.objects.create(
            project=locked, version=version, previous_id=locked.active_model_id, action=action, reason=reason,
            comparison=comparison, by=by,
        )  # fmt: skip
        AnnotationProject.objects.filter(pk=locked.pk).update(active_model=version)
        locked.active_model = version
        run = realign(locked, version, by)
        if run is not None:
            ModelActivation.objects.filter(pk=activation.pk).update(alignment_run=run)
            activation.alignment_run = run
    return activation


def suggestions_switch(run: AlignmentRun) -> int:
    """A finished re-alignment becomes the suggestion run of the projects waiting for it; returns how many.

    A run that re-suggests only the pairs nobody had started (automatic adaptation) first gets the current
    suggestions of every pair started by now (:func:`annotation.training.resuggest.started_pairs_keep`).
    """
    from annotation.training.resuggest import started_pairs_keep

    with transaction.atomic():
        for project in AnnotationProject.objects.select_for_update().filter(pending_suggestion_run=run):
            started_pairs_keep(project, run)
        return AnnotationProject.objects.filter(pending_suggestion_run=run).update(suggestion_run=run, pending_suggestion_run=None)
