"""Gold readers (Wiki-Manual TSV, DEplain CSV), the JSON-lines group format and sentence files."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from models_ml.io import (
    AlignmentGroup,
    read_deplain,
    read_groups_jsonl,
    read_sentences_file,
    read_wiki_manual_tsv,
    unplaced_summary,
    write_groups_jsonl,
)

DEPLAIN_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "deplain-web-dev"


def write_tsv(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    return path


# Complex: paragraph 0 = "C first. C second.", paragraph 1 = "C third."; simple likewise with three sentences.
WIKI_ROWS = [
    ["partialAligned", "My-Doc-0-1-0", "My-Doc-1-1-0", "S third.", "C third.", "0.4"],
    ["aligned", "My-Doc-0-0-1", "My-Doc-1-0-0", "S second.", "C first.", "0.3"],
    ["aligned", "My-Doc-0-0-0", "My-Doc-1-0-0", "S first.", "C first.", "0.5"],
    ["notAligned", "My-Doc-0-0-0", "My-Doc-1-0-1", "S first.", "C second.", "0.0"],
    ["notAligned", "My-Doc-0-1-0", "My-Doc-1-0-1", "S third.", "C second.", "0.0"],
]


def test_wiki_manual_reader_rebuilds_documents_and_groups_a_split(tmp_path: Path) -> None:
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "dev.tsv", WIKI_ROWS))
    assert len(pairs) == 1
    pair = pairs[0]
    assert pair.pair_id == "My-Doc-1|My-Doc-0"
    assert pair.complex_sentences == ["C first.", "C second.", "C third."]
    assert pair.simple_sentences == ["S first.", "S second.", "S third."]
    assert pair.complex_paragraphs == [0, 0, 1]
    assert pair.simple_paragraphs == [0, 0, 1]
    assert pair.groups == [
        AlignmentGroup(complex=(0,), simple=(0, 1), label="aligned"),
        AlignmentGroup(complex=(2,), simple=(2,), label="partial"),
    ]


def test_wiki_manual_component_with_a_partial_link_is_partial(tmp_path: Path) -> None:
    rows = [
        ["aligned", "A-0-0-0", "A-1-0-0", "s0", "c0"],
        ["partialAligned", "A-0-0-1", "A-1-0-0", "s1", "c0"],
        ["aligned", "A-0-0-1", "A-1-0-1", "s1", "c1"],
    ]
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "x.tsv", rows))
    assert pairs[0].groups == [AlignmentGroup(complex=(0, 1), simple=(0, 1), label="partial")]


def test_wiki_manual_rows_of_different_articles_form_separate_pairs(tmp_path: Path) -> None:
    rows = [["aligned", "A-0-0-0", "A-1-0-0", "a", "A"], ["notAligned", "B-0-0-0", "B-1-0-0", "b", "B"]]
    pairs = read_wiki_manual_tsv(write_tsv(tmp_path / "x.tsv", rows))
    assert [p.pair_id for p in pairs] == ["A-1|A-0", "B-1|B-0"]
    assert pairs[1].groups == []


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        (["aligned", "A-0-0-1", "A-1-0-0", "s"], "expected 5 or 6 tab-separated columns, found 4"),
        (["maybe", "A-0-0-1", "A-1-0-0", "s", "c"], "unknown label 'maybe'"),
        (["aligned", "A-0-x-1", "A-1-0-0", "s", "c"], "malformed sentence id 'A-0-x-1'"),
    ],
)
def test_wiki_manual_malformed_line_names_file_and_line(tmp_path: Path, bad_row: list[str], message: str) -> None:
    path = write_tsv(tmp_path / "bad.tsv", [WIKI_ROWS[0], WIKI_ROWS[1], bad_row])
    with pytest.raises(ValueError) as error:
        read_wiki_manual_tsv(path)
    assert f"{path}, line 3" in str(error.value)
    assert message in str(error.value)


def write_deplain(folder: Path, documents: list[dict[str, str]], alignments: list[dict[str, str]]) -> tuple[Path, Path]:
    documents_path, alignments_path = folder / "documents.csv", folder / "alignments.csv"
    with documents_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["original", "simplification", "pair_id", "license", "domain"])
        writer.writeheader()
        writer.writerows({"license": "CC_BY_4", **row} for row in documents)
    with alignments_path.open("w", newline="", encoding="utf-8") as handle:
        fields = ["original", "simplification", "original_id", "simplification_id", "pair_id", "rater", "alignment"]
        writer = csv.DictWriter(handle, fields)
        writer.writeheader()
        writer.writerows({"rater": "1", **row} for row in alignments)
    return documents_path, alignments_path


DEPLAIN_DOCUMENTS = [
    {
        "pair_id": "7",
        "original": "Anna lacht.|||Bert weint.|||Clara singt.|||Dora tanzt.",
        "simplification": "Anna ist froh.|||Bert ist traurig.|||Er weint.|||Clara singt.|||Dora tanzt gern.",
        "domain": "fiction",
    },
    {"pair_id": "8", "original": "Eins.|||Zwei.", "simplification": "Eins.", "domain": ""},
]
# The ids' paragraph numbers have gaps and sentence numbers skip, as in the real files.
DEPLAIN_ALIGNMENTS = [
    {"original": "Anna lacht.", "simplification": "Anna ist froh.", "original_id": "7-1-0-0",
     "simplification_id": "7-0-1-0", "pair_id": "7", "alignment": "aligned"},
    {"original": "Bert weint.", "simplification": "Bert ist traurig. Er weint.", "original_id": "7-1-0-1",
     "simplification_id": "7-0-1-1|7-0-3-0", "pair_id": "7", "alignment": "aligned"},
    {"original": "Clara singt.", "simplification": "Clara singt.", "original_id": "7-1-2-0",
     "simplification_id": "7-0-3-2", "pair_id": "7", "alignment": "identical"},
]  # fmt: skip


def test_deplain_reader_maps_ids_to_sentence_positions_by_text(tmp_path: Path) -> None:
    pairs = read_deplain(*write_deplain(tmp_path, DEPLAIN_DOCUMENTS, DEPLAIN_ALIGNMENTS))
    assert [p.pair_id for p in pairs] == ["7", "8"]
    first = pairs[0]
    assert first.complex_sentences[3] == "Dora tanzt."
    assert first.complex_paragraphs is None and first.simple_paragraphs is None
    assert first.groups == [
        AlignmentGroup(complex=(0,), simple=(0,), label="aligned"),
        AlignmentGroup(complex=(1,), simple=(1, 2), label="aligned"),
        AlignmentGroup(complex=(2,), simple=(3,), label="aligned", identical=True),
    ]
    assert pairs[1].groups == []
    assert [p.domain for p in pairs] == ["fiction", ""]  # the optional domain column


def test_deplain_repeated_sentence_is_placed_by_document_order(tmp_path: Path) -> None:
    documents = [{"pair_id": "9", "original": "A.|||B.", "simplification": "Ja.|||X.|||Ja."}]
    alignments = [
        {"original": "A.", "simplification": "X.", "original_id": "9-1-0-0", "simplification_id": "9-0-0-1",
         "pair_id": "9", "alignment": "aligned"},
        {"original": "B.", "simplification": "Ja.", "original_id": "9-1-0-1", "simplification_id": "9-0-1-0",
         "pair_id": "9", "alignment": "aligned"},
    ]  # fmt: skip
    pairs = read_deplain(*write_deplain(tmp_path, documents, alignments))
    assert pairs[0].groups[1] == AlignmentGroup(complex=(1,), simple=(2,), label="aligned")


def test_deplain_row_whose_text_is_not_in_the_document_is_left_out_and_reported(tmp_path: Path) -> None:
    broken = [*DEPLAIN_ALIGNMENTS[:2], {**DEPLAIN_ALIGNMENTS[2], "simplification": "Clara tanzt."}]
    documents_path, alignments_path = write_deplain(tmp_path, DEPLAIN_DOCUMENTS, broken)
    pairs = read_deplain(documents_path, alignments_path)
    assert pairs[0].groups == [
        AlignmentGroup(complex=(0,), simple=(0,), label="aligned"),
        AlignmentGroup(complex=(1,), simple=(1, 2), label="aligned"),
    ]
    assert pairs[0].unplaced_rows == [
        f"{alignments_path}, line 4: the simple text does not match sentences of the document in {documents_path}"
    ]
    assert pairs[1].unplaced_rows == []
    summary = unplaced_summary(pairs)
    assert summary is not None and summary.splitlines()[0] == "1 gold row(s) in 1 pair(s) could not be placed and were left out:"
    assert unplaced_summary(read_deplain(*write_deplain(tmp_path, DEPLAIN_DOCUMENTS, DEPLAIN_ALIGNMENTS))) is None


def test_deplain_strict_reading_names_the_line_of_an_unplaceable_row(tmp_path: Path) -> None:
    broken = [*DEPLAIN_ALIGNMENTS[:2], {**DEPLAIN_ALIGNMENTS[2], "simplification": "Clara tanzt."}]
    documents_path, alignments_path = write_deplain(tmp_path, DEPLAIN_DOCUMENTS, broken)
    with pytest.raises(ValueError, match=rf"{re.escape(str(alignments_path))}, line 4: the simple text does not match"):
        read_deplain(documents_path, alignments_path, strict=True)


def test_deplain_row_with_a_repeated_id_and_odd_spacing_is_placed(tmp_path: Path) -> None:
    # As pair 812 of the real files: a one-word sentence joined to the next by two spaces, one id listed twice.
    documents = [
        {
            "pair_id": "5",
            "original": "Radfahrer|||Lassen Sie das Auto stehen.|||Gut.",
            "simplification": 'Fahren Sie Rad.|||Lassen Sie das Auto stehen.|||"Gut."',
        }
    ]
    alignments = [
        {"original": "Radfahrer  Lassen Sie das Auto stehen.", "simplification": "Fahren Sie Rad. Lassen Sie das Auto stehen.",
         "original_id": "5-1-5-1|5-1-5-2|5-1-5-2", "simplification_id": "5-0-0-0|5-0-0-1", "pair_id": "5",
         "alignment": "aligned"},
        # Spacing inside a text and typographic quotes do not matter.
        {"original": "Gut .", "simplification": "„Gut.“", "original_id": "5-1-6-0", "simplification_id": "5-0-1-0",
         "pair_id": "5", "alignment": "identical"},
    ]  # fmt: skip
    pairs = read_deplain(*write_deplain(tmp_path, documents, alignments), strict=True)
    assert pairs[0].groups == [
        AlignmentGroup(complex=(0, 1), simple=(0, 1), label="aligned"),
        AlignmentGroup(complex=(2,), simple=(2,), label="aligned", identical=True),
    ]


def test_deplain_id_of_the_wrong_level_is_rejected(tmp_path: Path) -> None:
    wrong = [{**DEPLAIN_ALIGNMENTS[0], "original_id": "7-0-0-0"}]
    with pytest.raises(ValueError, match="should start with 7-1-"):
        read_deplain(*write_deplain(tmp_path, DEPLAIN_DOCUMENTS, wrong))


@pytest.mark.shared_data
@pytest.mark.skipif(not DEPLAIN_DIR.is_dir(), reason=f"DEplain-web dev data not found at {DEPLAIN_DIR}")
def test_real_deplain_dev_files_give_56_pairs_with_every_row_placed() -> None:
    pairs = read_deplain(DEPLAIN_DIR / "documents.csv", DEPLAIN_DIR / "alignments.csv")
    assert len(pairs) == 56
    assert unplaced_summary(pairs) is None
    with (DEPLAIN_DIR / "alignments.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = sum(1 for _ in csv.DictReader(handle))
    assert sum(len(p.groups) for p in pairs) == rows == 986  # every row of alignments.csv was placed
    assert Counter(p.domain for p in pairs) == {"language learner": 40, "fiction": 6, "health": 6, "bible": 4}
    for pair in pairs:
        for group in pair.groups:
            assert max(group.complex) < len(pair.complex_sentences)
            assert max(group.simple) < len(pair.simple_sentences)


def test_groups_jsonl_round_trip_keeps_scores_and_labels(tmp_path: Path) -> None:
    groups = [
        AlignmentGroup(complex=(0, 1), simple=(0,), label="aligned", score=0.91),
        AlignmentGroup(complex=(3,), simple=(2, 4), label="partial"),
    ]
    path = tmp_path / "groups.jsonl"
    write_groups_jsonl(path, groups)
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    assert first_line == '{"complex": [0, 1], "simple": [0], "label": "aligned", "score": 0.91}'
    assert read_groups_jsonl(path) == groups


def test_groups_jsonl_bad_label_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "groups.jsonl"
    path.write_text('{"complex": [0], "simple": [0], "label": "aligned"}\n\n{"complex": [1], "simple": [1], "label": "maybe"}\n')
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}, line 3: label must be one of"):
        read_groups_jsonl(path)


def test_sentences_file_blank_lines_break_paragraphs_and_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_bytes("\ufeff\nFirst one.\r\nSecond one.\r\n\r\n\r\nThird one.\n  \nFourth one.\n\n".encode())
    sentences, paragraphs = read_sentences_file(path)
    assert sentences == ["First one.", "Second one.", "Third one.", "Fourth one."]
    assert paragraphs == [0, 0, 1, 2]


def test_sentences_file_without_sentences_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n \n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: the file holds no sentences"):
        read_sentences_file(path)


def test_sentences_file_with_invalid_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\u00e9 ouvert.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: not valid UTF-8"):
        read_sentences_file(path)


def test_alignment_group_stores_numpy_indices_as_sorted_plain_ints() -> None:
    group = AlignmentGroup(complex=(np.int64(3), np.int64(1)), simple=(2, 2), label="partial")
    assert group == AlignmentGroup(complex=(1, 3), simple=(2,), label="partial")
    assert all(type(i) is int for i in group.complex)


def test_alignment_group_rejects_empty_sides_and_unknown_labels() -> None:
    with pytest.raises(ValueError, match="needs sentences on both sides"):
        AlignmentGroup(complex=(), simple=(0,))
    with pytest.raises(ValueError, match="label must be one of"):
        AlignmentGroup(complex=(0,), simple=(0,), label="identical")
