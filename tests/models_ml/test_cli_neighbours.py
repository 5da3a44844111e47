"""``python -m models_ml neighbours``: the JSONL contract, and one line on stderr with no output for each bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models_ml.__main__ import main

CORPUS = [
    "Der Stadtrat hat am Dienstag eine neue Straßenbahnlinie beschlossen.",
    "Die Bienen sammeln im Sommer Nektar von tausenden Blüten.",
    "Im Krankenhaus warten viele Menschen auf einen Termin beim Arzt.",
    "Die Straßenbahn fährt vom Hafen bis zur Universität.",
]
QUERIES = ["Die Bienen sammeln im Sommer Nektar von vielen Blüten.", "Der Stadtrat beschloss eine neue Straßenbahnlinie."]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return path


def neighbours(tmp_path: Path, *options: str) -> tuple[int, Path]:
    queries, corpus = write_lines(tmp_path / "queries.txt", QUERIES), write_lines(tmp_path / "corpus.txt", CORPUS)
    out = tmp_path / "out.jsonl"
    argv = ["neighbours", "--queries", str(queries), "--corpus", str(corpus), "--output", str(out), *options]
    return main(argv), out


def assert_contract(out: Path, k: int) -> list[dict]:
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["query"] for line in lines] == list(range(len(QUERIES)))
    for line in lines:
        assert set(line) == {"query", "neighbours"} and len(line["neighbours"]) == k
        indices = [index for index, _ in line["neighbours"]]
        scores = [score for _, score in line["neighbours"]]
        assert all(isinstance(i, int) and 0 <= i < len(CORPUS) for i in indices) and len(set(indices)) == k
        assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    return lines


def test_lexical_neighbours_follow_the_contract_best_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = neighbours(tmp_path, "--k", "2", "--retrieval", "lexical")
    assert status == 0 and "2 queries, 2 neighbours each (lexical)" in capsys.readouterr().out
    lines = assert_contract(out, 2)
    assert [line["neighbours"][0][0] for line in lines] == [1, 0]


def test_k_above_the_corpus_size_lists_every_sentence_once(tmp_path: Path) -> None:
    status, out = neighbours(tmp_path, "--k", "10", "--retrieval", "lexical")
    assert status == 0
    assert_contract(out, len(CORPUS))


def test_default_retrieval_is_lexical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = neighbours(tmp_path, "--k", "1")
    assert status == 0 and "(lexical)" in capsys.readouterr().out


@pytest.mark.parametrize("retrieval", ["dense", "hybrid"])
def test_encoder_retrievals_follow_the_contract(retrieval: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = neighbours(tmp_path, "--k", "3", "--retrieval", retrieval, "--device", "cpu")
    assert status == 0 and f"({retrieval})" in capsys.readouterr().out
    lines = assert_contract(out, 3)
    assert [line["neighbours"][0][0] for line in lines] == [1, 0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"queries": []}, "queries.txt: the file holds no sentences"),
        ({"corpus": []}, "corpus.txt: the file holds no sentences"),
        ({"queries": None}, "queries.txt: no such file"),
        ({"corpus": None}, "corpus.txt: no such file"),
        ({"options": ["--k", "0"]}, "--k must be >= 1, got 0"),
        ({"options": ["--k", "-3"]}, "--k must be >= 1, got -3"),
        ({"options": ["--k", "2", "--retrieval", "bm25"]}, "unknown --retrieval 'bm25'; known: dense, lexical, hybrid"),
        ({"options": ["--k", "2", "--retrieval", "dense", "--encoder", "no-such-encoder"]}, "--encoder 'no-such-encoder'"),
        ({"options": ["--k", "2", "--retrieval", "lexical", "--encoder", "x"]}, "--encoder is for dense and hybrid"),
        ({"output": "missing-folder/out.jsonl"}, "is not a writable directory"),
    ],
)
def test_bad_input_is_one_line_and_no_output(change: dict, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"queries": QUERIES, "corpus": CORPUS} | {key: change[key] for key in ("queries", "corpus") if key in change}
    paths = {name: tmp_path / f"{name}.txt" for name in files}
    for name, lines in files.items():
        if lines is not None:
            write_lines(paths[name], lines)
    out = tmp_path / change.get("output", "out.jsonl")
    argv = ["neighbours", "--queries", str(paths["queries"]), "--corpus", str(paths["corpus"]), "--output", str(out)]
    assert main([*argv, *change.get("options", ["--k", "2", "--retrieval", "lexical"])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not out.exists() and not list(tmp_path.rglob(".out.jsonl.*"))  # nor a half-written temporary file
