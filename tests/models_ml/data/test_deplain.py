"""The DEplain-web CSV reader (models_ml.data.deplain)."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from models_ml.data.deplain import read_deplain, unplaced_summary
from models_ml.data.io import AlignmentGroup

DEPLAIN_DIR = Path(__file__).resolve().parents[4] / "shared" / "data" / "deplain-web-dev"


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
