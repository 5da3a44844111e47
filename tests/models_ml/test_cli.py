"""``python -m models_ml`` as a subprocess: align's JSONL contract, bad input, evaluate's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

COMPLEX_TEXT = """The city council approved a new budget for public parks on Tuesday.
The mayor said the money would pay for new playgrounds and trees.

The river flooded several farms in the northern valley last spring.
Many farmers lost their crops.
"""
SIMPLE_TEXT = """The city council agreed on a new budget for parks.
The mayor said the money is for playgrounds.
It will also pay for trees.

Last spring the river flooded farms in the north and many farmers lost their crops.
"""


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, with the session's ENCODER_BACKEND (fp32 vectors: exact groups; tests/embedded_database.py)."""
    return subprocess.run(
        [sys.executable, "-m", "models_ml", *map(str, args)],
        cwd=REPOSITORY,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def documents(tmp_path: Path) -> tuple[Path, Path]:
    complex_path, simple_path = tmp_path / "complex.txt", tmp_path / "simple.txt"
    complex_path.write_text(COMPLEX_TEXT, encoding="utf-8")
    simple_path.write_text(SIMPLE_TEXT, encoding="utf-8")
    return complex_path, simple_path


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_align_uses_the_shipped_model_by_default(documents: tuple[Path, Path], tmp_path: Path) -> None:
    complex_path, simple_path = documents
    output, explicit = tmp_path / "out.jsonl", tmp_path / "explicit.jsonl"
    completed = run_cli("align", "--complex", complex_path, "--simple", simple_path, "--output", output, "--device", "cpu")
    assert completed.returncode == 0, completed.stderr
    records = read_records(output)
    for record in records:
        assert set(record) == {"complex", "simple", "label", "score"} and record["label"] in ("aligned", "partial")
    assert ([1], [1, 2]) in [(r["complex"], r["simple"]) for r in records]  # the split comes out whole
    default_model = REPOSITORY / "models_ml" / "default_model"
    again = run_cli("align", "--complex", complex_path, "--simple", simple_path, "--output", explicit, "--model", default_model)
    assert again.returncode == 0 and explicit.read_text() == output.read_text()


@pytest.mark.slow
def test_untrained_hand_calibration_stays_available(documents: tuple[Path, Path], tmp_path: Path) -> None:
    """Exact groups from MiniLM cosines: on torch (run_cli's default), not int8, whose vectors follow the CPU's kernels."""
    complex_path, simple_path = documents
    output = tmp_path / "out.jsonl"
    completed = run_cli("align", "--complex", complex_path, "--simple", simple_path, "--output", output, "--untrained", "--device", "cpu")
    assert completed.returncode == 0, completed.stderr
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    for record in records:
        assert set(record) == {"complex", "simple", "label", "score"}
        assert record["label"] in ("aligned", "partial")
        assert isinstance(record["score"], float)
    assert [(r["complex"], r["simple"]) for r in records] == [([0], [0]), ([1], [1, 2]), ([2, 3], [3])]


@pytest.mark.slow
def test_align_with_saved_model_and_lexical_config(documents: tuple[Path, Path], tmp_path: Path) -> None:
    """--config builds an untrained aligner; the same settings saved as a model give the same output."""
    from models_ml.aligning.aligner import Aligner
    from models_ml.aligning.aligner_config import AlignerConfig

    complex_path, simple_path = documents
    config = AlignerConfig(measure="jaccard", device="cpu", null_score=0.1)
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config.to_dict()), encoding="utf-8")
    Aligner(config).save(tmp_path / "model")
    from_config, from_model = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first = run_cli("align", "--complex", complex_path, "--simple", simple_path, "--output", from_config, "--config", config_path)
    second = run_cli("align", "--complex", complex_path, "--simple", simple_path, "--output", from_model, "--model", tmp_path / "model")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert from_config.read_text() == from_model.read_text() != ""


@pytest.mark.parametrize("problem", ["missing", "empty", "undecodable"])
def test_align_rejects_bad_sentence_file_naming_it(problem: str, documents: tuple[Path, Path], tmp_path: Path) -> None:
    complex_path, _ = documents
    bad = tmp_path / f"{problem}.txt"
    if problem == "empty":
        bad.write_text("\n\n", encoding="utf-8")
    elif problem == "undecodable":
        bad.write_bytes(b"caf\xe9 au lait\n")
    completed = run_cli("align", "--complex", complex_path, "--simple", bad, "--output", tmp_path / "out.jsonl")
    assert completed.returncode != 0
    assert str(bad) in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "expected"),
    [("{not json", "not valid JSON"), ('{"treshold": 1}', "treshold"), ('{"measure": "bleu"}', "bleu")],
)
def test_align_rejects_bad_config_naming_it(content: str, expected: str, documents: tuple[Path, Path], tmp_path: Path) -> None:
    complex_path, simple_path = documents
    config_path = tmp_path / "bad-config.json"
    config_path.write_text(content, encoding="utf-8")
    completed = run_cli(
        "align", "--complex", complex_path, "--simple", simple_path, "--output", tmp_path / "o.jsonl", "--config", config_path
    )
    assert completed.returncode != 0
    assert str(config_path) in completed.stderr and expected in completed.stderr


def test_evaluate_prints_both_tasks_at_both_levels(tmp_path: Path) -> None:
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(
        '{"complex": [0], "simple": [0], "label": "aligned"}\n'
        '{"complex": [1], "simple": [1, 2], "label": "aligned"}\n'
        '{"complex": [2], "simple": [3], "label": "partial"}\n',
        encoding="utf-8",
    )
    pred.write_text(
        '{"complex": [0], "simple": [0], "label": "aligned", "score": 0.9}\n'
        '{"complex": [1], "simple": [1], "label": "aligned", "score": 0.8}\n'
        '{"complex": [2], "simple": [3], "label": "aligned", "score": 0.7}\n',
        encoding="utf-8",
    )
    completed = run_cli("evaluate", "--gold", gold, "--pred", pred, "--json")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    figures = {
        (level, task): (report[level][task]["tp"], report[level][task]["fp"], report[level][task]["fn"])
        for level in ("sentence", "group")
        for task in ("task1", "task2")
    }
    # Gold pairs: (0,0) (1,1) (2,1) aligned, (3,2) partial; predicted: (0,0) (1,1) (3,2) all aligned.
    assert figures == {
        ("sentence", "task1"): (3, 0, 1),
        ("sentence", "task2"): (2, 1, 1),
        ("group", "task1"): (2, 1, 1),
        ("group", "task2"): (1, 2, 1),
    }
    table = run_cli("evaluate", "--gold", gold, "--pred", pred)
    assert table.returncode == 0
    report_part, sweep_part = table.stdout.split("\n\n")
    rows = [line.split() for line in report_part.splitlines() if line.startswith(("sentence", "group"))]
    assert "max F1 over group-score thresholds" in sweep_part
    assert [(r[0], r[1], r[4]) for r in rows] == [
        ("sentence", "1", "0.8571"),
        ("sentence", "2", "0.6667"),
        ("group", "1", "0.6667"),
        ("group", "2", "0.4000"),
    ]


def test_evaluate_sweeps_the_group_score_threshold_for_max_f1(tmp_path: Path) -> None:
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(
        '{"complex": [0], "simple": [0], "label": "aligned"}\n{"complex": [1], "simple": [1], "label": "aligned"}\n', encoding="utf-8"
    )
    pred.write_text(
        '{"complex": [0], "simple": [0], "label": "aligned", "score": 0.9}\n'
        '{"complex": [2], "simple": [2], "label": "aligned", "score": 0.5}\n'
        '{"complex": [1], "simple": [1], "label": "aligned", "score": 0.7}\n',
        encoding="utf-8",
    )
    completed = run_cli("evaluate", "--gold", gold, "--pred", pred, "--json")
    sweep = json.loads(completed.stdout)["sweep"]
    assert sweep["group task 1"]["threshold"] == 0.7  # drops the wrong 0.5 group, keeps both right ones
    assert sweep["group task 1"]["f1"] == 1.0 and sweep["sentence task 1"]["f1"] == 1.0


def test_evaluate_without_scores_prints_no_sweep(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"complex": [0], "simple": [0], "label": "aligned"}\n', encoding="utf-8")
    completed = run_cli("evaluate", "--gold", gold, "--pred", gold, "--json")
    assert completed.returncode == 0 and "sweep" not in json.loads(completed.stdout)


def test_evaluate_rejects_missing_gold_file(tmp_path: Path) -> None:
    pred = tmp_path / "pred.jsonl"
    pred.write_text("", encoding="utf-8")
    completed = run_cli("evaluate", "--gold", tmp_path / "nope.jsonl", "--pred", pred)
    assert completed.returncode != 0 and "nope.jsonl" in completed.stderr


def test_help_says_train_comes_later() -> None:
    completed = run_cli("--help")
    assert completed.returncode == 0 and "train" in completed.stdout


def test_evaluate_deplain_corpus_with_prediction_directory(tmp_path: Path) -> None:
    """Pair 7 has a prediction file, pair 8 none (an empty prediction); counts are summed over both."""
    documents = tmp_path / "documents.csv"
    documents.write_text(
        "original,simplification,pair_id,license\n"
        "Anna lacht.|||Bert weint.|||Clara singt.,Anna ist froh.|||Bert ist traurig.|||Er weint.|||Clara singt.,7,CC\n"
        "Eins.|||Zwei.,Eins.,8,CC\n",
        encoding="utf-8",
    )
    alignments = tmp_path / "alignments.csv"
    alignments.write_text(
        "original,simplification,original_id,simplification_id,pair_id,rater,alignment\n"
        "Anna lacht.,Anna ist froh.,7-1-0-0,7-0-0-0,7,1,aligned\n"
        "Bert weint.,Bert ist traurig. Er weint.,7-1-0-1,7-0-0-1|7-0-0-2,7,1,aligned\n"
        "Clara singt.,Clara singt.,7-1-1-0,7-0-1-0,7,1,identical\n",
        encoding="utf-8",
    )
    predictions = tmp_path / "pred"
    predictions.mkdir()
    (predictions / "7.jsonl").write_text(
        '{"complex": [0], "simple": [0], "label": "aligned", "score": 1.0}\n'
        '{"complex": [1], "simple": [1], "label": "aligned", "score": 1.0}\n',
        encoding="utf-8",
    )
    completed = run_cli(
        "evaluate", "--gold-format", "deplain", "--gold-documents", documents,
        "--gold-alignments", alignments, "--pred-dir", predictions, "--json",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["documents"] == 2
    assert (report["sentence"]["task1"]["tp"], report["sentence"]["task1"]["fn"]) == (2, 2)
    assert (report["group"]["task1"]["tp"], report["group"]["task1"]["fp"], report["group"]["task1"]["fn"]) == (1, 1, 2)


def test_evaluate_deplain_reports_an_unplaceable_gold_row_and_scores_the_rest(tmp_path: Path) -> None:
    documents = tmp_path / "documents.csv"
    documents.write_text("original,simplification,pair_id\nAnna lacht.|||Bert weint.,Anna ist froh.|||Bert ist traurig.,7\n")
    alignments = tmp_path / "alignments.csv"
    alignments.write_text(
        "original,simplification,original_id,simplification_id,pair_id,alignment\n"
        "Anna lacht.,Anna ist froh.,7-1-0-0,7-0-0-0,7,aligned\n"
        "Bert weint.,Bert ist glücklich.,7-1-0-1,7-0-0-1,7,aligned\n",
        encoding="utf-8",
    )
    predictions = tmp_path / "pred"
    predictions.mkdir()
    (predictions / "7.jsonl").write_text('{"complex": [0], "simple": [0], "label": "aligned", "score": 1.0}\n')
    completed = run_cli(
        "evaluate", "--gold-format", "deplain", "--gold-documents", documents,
        "--gold-alignments", alignments, "--pred-dir", predictions, "--json",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "warning: 1 gold row(s) in 1 pair(s) could not be placed and were left out:" in completed.stderr
    assert f"{alignments}, line 3: the simple text does not match" in completed.stderr
    report = json.loads(completed.stdout)
    assert (report["group"]["task1"]["tp"], report["group"]["task1"]["fn"]) == (1, 0)
