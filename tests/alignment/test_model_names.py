"""One vocabulary for models: the shipped default model, the hand-calibrated MiniLM aligner, vN."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings

from alignment.aligning import service as aligning
from alignment.aligning.model_names import HAND_CALIBRATED, SHIPPED_DEFAULT, model_label, public_model_version, stored_model_label
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR


def test_each_kind_of_model_has_one_name(tmp_path: Path, settings) -> None:
    assert model_label(model_dir=str(DEFAULT_MODEL_DIR)) == SHIPPED_DEFAULT == "the shipped default model"
    assert model_label(model_dir=str(DEFAULT_MODEL_DIR / ".." / "default_model")) == SHIPPED_DEFAULT  # the same folder
    assert model_label() == HAND_CALIBRATED == "the hand-calibrated MiniLM aligner"
    assert model_label(measure="embedding_cosine", encoder="all-MiniLM-L6-v2") == HAND_CALIBRATED
    assert model_label(measure="jaccard") == "the hand-calibrated aligner on jaccard"
    assert model_label(measure="word_max", encoder="all-MiniLM-L6-v2") == "the hand-calibrated MiniLM aligner on word_max"
    assert model_label(measure="embedding_cosine", encoder="LaBSE") == "the hand-calibrated aligner on embedding_cosine (LaBSE)"
    assert model_label(version=3) == "v3" == model_label(model_dir=str(tmp_path / "models" / "project-7" / "v3"))
    assert model_label(mining_job=4) == "mined pairs (mining job #4)"
    settings.ALIGNER_MODEL_DIR = str(tmp_path / "our-model")
    assert model_label(model_dir=str(tmp_path / "our-model")) == "the configured default model (our-model)"
    assert model_label(model_dir=str(tmp_path / "elsewhere")) == "the model in elsewhere"  # no server directory shown


def test_names_stored_before_the_vocabulary_read_as_todays() -> None:
    assert stored_model_label("untrained") == HAND_CALIBRATED
    assert stored_model_label("default model") == SHIPPED_DEFAULT
    assert stored_model_label("v2") == "v2"


@pytest.mark.django_db
def test_a_run_is_named_by_the_model_it_aligned_with(tram_corpus, monkeypatch) -> None:
    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    shipped = aligning.alignment_run_create(corpus=tram_corpus, model_dir=django_settings.ALIGNER_MODEL_DIR)
    assert shipped.model_label == SHIPPED_DEFAULT and shipped.primary_measure == "learned"
    lexical = aligning.alignment_run_create(corpus=tram_corpus, aligner_config={"measure": "jaccard"})
    assert lexical.model_label == "the hand-calibrated aligner on jaccard" and lexical.model_version.startswith("untrained")
    # A measure the shipped model was not trained on runs without its weights, and is named so.
    asked = aligning.alignment_run_create(
        corpus=tram_corpus, model_dir=django_settings.ALIGNER_MODEL_DIR, aligner_config={"measure": "jaccard"}
    )
    assert asked.model_label == "the hand-calibrated aligner on jaccard"


@pytest.mark.django_db
def test_manage_py_align_names_the_model_as_the_pages_do(tram_corpus, monkeypatch, capsys) -> None:
    from django.core.management import call_command

    monkeypatch.setattr("alignment.jobs.enqueue.defer", lambda *args, **kwargs: None)
    call_command("align", "--corpus", "Trams")
    assert "model: the shipped default model (" in capsys.readouterr().out
    call_command("align", "--corpus", "Trams", "--model", "untrained", "--measure", "jaccard")
    assert "model: the hand-calibrated aligner on jaccard (untrained (hand-calibrated))" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("/srv/aligner/models_ml/default_model (sha256 0123456789ab)", "default_model (sha256 0123456789ab)"),
        ("/var/lib/aligner/models/project-3/v2 (sha256 abcdefabcdef)", "project-3/v2 (sha256 abcdefabcdef)"),
        ("C:\\models\\mine (sha256 00ff00ff00ff)", "mine (sha256 00ff00ff00ff)"),
        ("untrained (hand-calibrated)", "untrained (hand-calibrated)"),
        ("mined by mining job #4 (MUSS)", "mined by mining job #4 (MUSS)"),
        ("", ""),
        (None, None),
    ],
)
def test_a_model_version_leaves_the_server_without_its_directories(stored, shown) -> None:
    assert public_model_version(stored) == shown
