"""Uncertainty scores for active learning (models_ml.aligning.uncertainty) and the benchmark's SVG line chart (bench/_svg.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from bench._svg import LineChart, Series, nice_ticks, write_line_chart
from models_ml.aligning.uncertainty import (
    binary_entropy,
    document_uncertainty,
    margin_uncertainty,
)

SVG = "{http://www.w3.org/2000/svg}"


def test_binary_entropy_is_one_bit_at_one_half_and_zero_at_certainty() -> None:
    values = binary_entropy(np.array([0.5, 0.0, 1.0]))
    assert values == pytest.approx([1.0, 0.0, 0.0])


def test_binary_entropy_matches_the_formula_and_is_symmetric() -> None:
    p = 0.2
    expected = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    assert binary_entropy(np.array([p, 1 - p])) == pytest.approx([expected, expected])


def test_margin_uncertainty_is_one_at_one_half_zero_at_certainty_and_linear_between() -> None:
    values = margin_uncertainty(np.array([0.5, 0.0, 1.0, 0.25, 0.9]))
    assert values == pytest.approx([1.0, 0.0, 0.0, 0.5, 0.2])


def test_entropy_and_margin_rank_single_candidates_identically() -> None:
    p = np.random.default_rng(0).uniform(0.0, 1.0, size=200)
    by_entropy = np.argsort(-binary_entropy(p), kind="stable")
    by_margin = np.argsort(-margin_uncertainty(p), kind="stable")
    assert by_entropy.tolist() == by_margin.tolist()


def test_document_uncertainty_is_the_mean_over_candidates() -> None:
    marginals = [0.5, 1.0, 0.0, 0.25]
    assert document_uncertainty(marginals, "entropy") == pytest.approx(np.mean(binary_entropy(np.array(marginals))))
    assert document_uncertainty(marginals, "margin") == pytest.approx((1.0 + 0.0 + 0.0 + 0.5) / 4)


def test_document_uncertainty_prefers_the_pair_with_more_doubtful_candidates() -> None:
    sure = [0.98, 0.02, 0.99]
    doubtful = [0.6, 0.4, 0.99]
    for method in ("entropy", "margin"):
        assert document_uncertainty(doubtful, method) > document_uncertainty(sure, method)


def test_document_uncertainty_of_no_candidates_is_zero() -> None:
    assert document_uncertainty([], "entropy") == 0.0
    assert document_uncertainty(np.array([]), "margin") == 0.0


def test_document_uncertainty_rejects_an_unknown_method() -> None:
    with pytest.raises(ValueError, match="unknown uncertainty method 'variance'"):
        document_uncertainty([0.5], "variance")


def test_line_chart_svg_parses_as_xml_and_names_both_series(tmp_path: Path) -> None:
    chart = LineChart(
        title="F1 <by> labels & folds",
        x_label="labelled pairs",
        y_label="F1",
        series=[
            Series("random order", [0, 3, 6], [0.70, 0.75, 0.80], lower=[0.65, 0.70, 0.75], upper=[0.75, 0.80, 0.85]),
            Series('uncertainty "entropy"', [0, 3, 6], [0.70, 0.78, 0.81]),
        ],
        note="mean over 4 folds",
    )
    path = write_line_chart(chart, tmp_path / "plots" / "chart.svg")
    root = ET.parse(path).getroot()
    texts = [element.text for element in root.iter(f"{SVG}text")]
    assert root.tag == f"{SVG}svg"
    assert "random order" in texts
    assert 'uncertainty "entropy"' in texts
    assert "F1 <by> labels & folds" in texts
    assert len(list(root.iter(f"{SVG}polyline"))) == 2  # one line per series
    assert len(list(root.iter(f"{SVG}polygon"))) == 1  # the band of the series that has one


def test_line_chart_rejects_series_of_unequal_length(tmp_path: Path) -> None:
    chart = LineChart("t", "x", "y", [Series("broken", [0, 1, 2], [0.5, 0.6])])
    with pytest.raises(ValueError, match="series 'broken'"):
        write_line_chart(chart, tmp_path / "chart.svg")


def test_nice_ticks_cover_the_range_with_round_steps() -> None:
    ticks = nice_ticks(0.0, 33.0, 8)
    assert ticks[0] <= 0.0 and ticks[-1] >= 33.0
    assert ticks == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0]
