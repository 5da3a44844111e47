"""A model's held-out calibration (models_ml.aligning.calibration): what it counts, how it is written and read back,
and that an altered file is not trusted; the shipped model carries one bulk accept can use."""

from __future__ import annotations

import json

import pytest

from annotation.labelling.bulk_estimate import threshold_for
from models_ml.aligning.aligner import Aligner
from models_ml.aligning.calibration import CALIBRATION, calibration_read, calibration_write, suggestion_answers
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR
from models_ml.data.io import AlignmentGroup, GoldPair

COMPLEX = ["The tram line opened in May after three years of work.", "It cost far more than planned.", "The trams are quiet."]
SIMPLE = ["The tram line opened in May.", "It cost more than planned.", "The trams are quiet."]


@pytest.fixture(scope="module")
def aligner():
    return Aligner.load(DEFAULT_MODEL_DIR, device="cpu")


def test_each_suggestion_is_scored_against_the_gold_with_the_screens_confidence(aligner):
    result = aligner.align(COMPLEX, SIMPLE)
    linked = [(j, i, g.label) for g in result.groups if g.label in ("aligned", "partial") for j in g.simple for i in g.complex]
    assert linked
    own = GoldPair("own", COMPLEX, SIMPLE, [AlignmentGroup(g.complex, g.simple, g.label) for g in result.groups], None, None)
    answers = suggestion_answers(result, own)
    assert len(answers) == len(linked) and all(right for _, right in answers) and all(0 <= c <= 1 for c, _ in answers)
    nothing = GoldPair("none", COMPLEX, SIMPLE, [], None, None)
    assert not any(right for _, right in suggestion_answers(result, nothing))


def test_written_calibration_reads_back_by_hundredths_and_an_altered_one_is_not_trusted(tmp_path):
    (tmp_path / "checksums.json").write_text(json.dumps({"config.json": "x"}) + "\n", encoding="utf-8")
    calibration_write(tmp_path, [(0.974, True), (0.979, False), (0.5, True), (0.12, False)], "a test")
    assert "config.json" in json.loads((tmp_path / "checksums.json").read_text()) and CALIBRATION in json.loads(
        (tmp_path / "checksums.json").read_text()
    )
    basis, answers = calibration_read(tmp_path)
    assert basis == "a test" and sorted(answers) == [(0.12, False), (0.5, True), (0.97, False), (0.97, True)]
    (tmp_path / CALIBRATION).write_text((tmp_path / CALIBRATION).read_text().replace("0.50", "0.90"), encoding="utf-8")
    assert calibration_read(tmp_path) is None
    assert calibration_read(tmp_path / "missing") is None


def test_the_shipped_model_carries_a_held_out_calibration_bulk_accept_can_use():
    basis, answers = calibration_read(DEFAULT_MODEL_DIR)
    assert "cross-validation" in basis and len(answers) > 500
    chosen = threshold_for(answers, 0.97, basis="model")
    assert chosen is not None and chosen.precision >= 0.97 and chosen.count >= 500
