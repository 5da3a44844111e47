"""``python -m models_ml mine``: LHA between two folders and MUSS within one, without a database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models_ml.__main__ import main

COMPLEX = {
    "tram": ["The city council approved a new tram line on Tuesday.", "The tram line will connect the harbour with the university."],
    "bees": ["Honeybees visit thousands of flowers every day to collect nectar.", "Beekeepers harvest the honey in late summer."],
}
SIMPLE = {
    "tram-simple": ["The city council wants a new tram line.", "The tram line will go from the harbour to the university."],
    "bees-simple": ["Honeybees visit many flowers every day.", "Beekeepers take the honey in summer."],
}


def write_folder(folder: Path, documents: dict[str, list[str]]) -> Path:
    folder.mkdir()
    for name, sentences in documents.items():
        (folder / f"{name}.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return folder


def read_items(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_mine_lha_finds_the_hidden_pairing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = write_folder(tmp_path / "complex", COMPLEX), write_folder(tmp_path / "simple", SIMPLE)
    out = tmp_path / "mined.jsonl"
    status = main(["mine", "--source", str(source), "--target", str(target), "--method", "lha", "--k", "1",
                   "--k-documents", "1", "--theta-d", "0.3", "--theta-s", "0.5", "--output", str(out), "--device", "cpu"])  # fmt: skip
    assert status == 0 and "mined items from 2 source and 2 target documents" in capsys.readouterr().out
    items = read_items(out)
    assert items and all(item["method"] == "lha" and item["target_doc"] == f"{item['source_doc']}-simple" for item in items)
    assert {(item["source_doc"], tuple(item["source"]), tuple(item["target"])) for item in items} >= {("tram", (1,), (1,))}


def test_mine_muss_pairs_paraphrases_of_different_documents(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs", {
        "a": ["The committee approved the annual budget on Monday."],
        "b": ["On Monday the annual budget was approved by the committee."],
        "c": ["Penguins live in the southern hemisphere."],
    })  # fmt: skip
    out = tmp_path / "muss.jsonl"
    assert main(["mine", "--source", str(folder), "--method", "muss", "--output", str(out), "--device", "cpu"]) == 0
    items = read_items(out)
    assert [(item["source_doc"], item["target_doc"]) for item in items] == [("a", "b")]
    assert set(items[0]["features"]) >= {"char_ratio", "levenshtein_replace_only", "word_rank_ratio", "dependency_depth_ratio"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--source", "{missing}", "--target", "{simple}", "--method", "lha"], "no such folder"),
        (["--source", "{empty}", "--method", "muss"], "no *.txt documents"),
        (["--source", "{simple}", "--method", "lha"], "--method lha needs --target"),
        (["--source", "{simple}", "--target", "{simple}", "--method", "lha", "--theta-s", "3"], "theta_s"),
    ],
)
def test_mine_bad_input_exits_2_naming_it(argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = {"missing": tmp_path / "missing", "simple": write_folder(tmp_path / "simple", SIMPLE), "empty": tmp_path / "empty"}
    folders["empty"].mkdir()
    args = [part.format(**folders) for part in argv]
    out = tmp_path / "out.jsonl"
    assert main(["mine", *args, "--output", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
