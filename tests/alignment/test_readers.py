"""Unit tests for read_file in each of the four formats, and for its errors (no database)."""

from __future__ import annotations

import json

import pytest

from alignment.importing.cleaning import ImportFormatError
from alignment.importing.readers import ImportOptions, read_file

TEXT = ImportOptions(format="text")
PRESPLIT = ImportOptions(format="presplit")
CSV = ImportOptions(format="csv")
JSONL = ImportOptions(format="jsonl")


def jsonl(*records) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode()


def read_error(name: str, data: bytes, options: ImportOptions) -> ImportFormatError:
    with pytest.raises(ImportFormatError) as info:
        read_file(name, data, options)
    assert name in str(info.value)
    assert info.value.file == name
    return info.value


# --- text ------------------------------------------------------------------------------------


def test_text_blank_lines_separate_paragraphs_and_lines_are_joined():
    data = b"First line of one.\nSecond line of one.\n\n\nParagraph two.\n"
    [doc] = read_file("Amazon-adv.txt", data, TEXT)
    assert (doc.external_id, doc.level) == ("Amazon", "adv")
    assert doc.paragraphs == ["First line of one. Second line of one.", "Paragraph two."]
    assert doc.sentences is None
    assert doc.line == 1


def test_text_line_mode_makes_each_line_a_paragraph():
    data = b"First line.\nSecond line.\n\nThird line.\n"
    [doc] = read_file("Amazon-adv.txt", data, ImportOptions(format="text", paragraph_mode="line"))
    assert doc.paragraphs == ["First line.", "Second line.", "Third line."]


def test_text_default_pattern_takes_id_and_level_from_last_dash():
    [doc] = read_file("Tram-line-2020-ele.txt", b"Hello there.", TEXT)
    assert (doc.external_id, doc.level) == ("Tram-line-2020", "ele")


def test_text_custom_filename_pattern():
    options = ImportOptions(format="text", filename_pattern=r"^(?P<level>\d+)_(?P<id>\w+)$")
    [doc] = read_file("2_moon_landing.txt", b"The moon is far.", options)
    assert (doc.external_id, doc.level) == ("moon_landing", "2")


def test_text_drop_level_header_drops_leading_level_line():
    data = b"Intermediate\nThe first paragraph.\n\nThe second paragraph.\n"
    [doc] = read_file("Amazon-int.txt", data, ImportOptions(format="text", drop_level_header=True))
    assert doc.paragraphs == ["The first paragraph.", "The second paragraph."]
    assert doc.line == 2


def test_text_level_header_is_kept_when_option_is_off():
    data = b"Intermediate\nThe first paragraph.\n\nThe second paragraph.\n"
    [doc] = read_file("Amazon-int.txt", data, TEXT)
    assert doc.paragraphs[0] == "Intermediate The first paragraph."


def test_text_drop_level_header_keeps_an_ordinary_first_line():
    data = b"Intermediate results were good.\n\nMore text.\n"
    [doc] = read_file("Amazon-int.txt", data, ImportOptions(format="text", drop_level_header=True))
    assert doc.paragraphs == ["Intermediate results were good.", "More text."]


def test_text_cleaning_counts_go_to_the_document():
    [doc] = read_file("A-adv.txt", b"\xef\xbb\xbfIt\x19s here.\x00", TEXT)
    assert doc.paragraphs == ["It\u2019s here."]
    assert doc.cleaning.had_bom is True
    assert doc.cleaning.punctuation_repaired == 1
    assert doc.cleaning.control_characters_removed == 1


# --- presplit --------------------------------------------------------------------------------


def test_presplit_one_sentence_per_line_blank_line_between_paragraphs():
    data = b"First sentence. Still first? No.\nSecond sentence.\n\nThird sentence.\n"
    [doc] = read_file("Moon-ele.txt", data, PRESPLIT)
    assert (doc.external_id, doc.level) == ("Moon", "ele")
    assert doc.sentences == [["First sentence. Still first? No.", "Second sentence."], ["Third sentence."]]
    assert doc.paragraphs is None


# --- csv -------------------------------------------------------------------------------------


def test_csv_with_id_column_groups_rows_into_articles():
    data = b"id,adv,ele\nA,A one adv.,A one ele.\nA,A two adv.,\nB,B adv.,B  ele.\n"
    docs = read_file("articles.csv", data, CSV)
    found = {(d.external_id, d.level): d.paragraphs for d in docs}
    assert found == {
        ("A", "adv"): ["A one adv.", "A two adv."],
        ("A", "ele"): ["A one ele."],
        ("B", "adv"): ["B adv."],
        ("B", "ele"): ["B ele."],
    }
    assert {(d.external_id, d.level): d.line for d in docs}[("B", "ele")] == 4


def test_csv_without_id_column_uses_file_stem_and_skips_empty_cells():
    data = b'adv,int,ele\nP1 adv.,P1 int.,P1 ele.\n"P2, adv.",,P2 ele.\n\n'
    docs = read_file("Whales.csv", data, CSV)
    assert {d.external_id for d in docs} == {"Whales"}
    found = {d.level: d.paragraphs for d in docs}
    assert found == {"adv": ["P1 adv.", "P2, adv."], "int": ["P1 int."], "ele": ["P1 ele.", "P2 ele."]}


def test_csv_row_with_wrong_field_count_reports_its_line():
    data = b"adv,ele\nok adv.,ok ele.\nok adv.,ok ele.\nonly one field\n"
    err = read_error("short.csv", data, CSV)
    assert err.line == 4
    assert "1 fields" in str(err) and "header has 2" in str(err)


def test_csv_unterminated_quote_is_an_error():
    data = b'adv,ele\nok adv.,ok ele.\n"never closed,ele text\n'
    err = read_error("quote.csv", data, CSV)
    assert "malformed CSV" in str(err)
    assert err.line == 3


# --- jsonl -----------------------------------------------------------------------------------


def test_jsonl_text_paragraphs_and_sentences():
    data = jsonl(
        {"id": "a", "level": "adv", "title": "The  Title", "text": "Para one. Two.\n\nPara two."},
        {"id": "a", "level": "ele", "paragraphs": ["P one.", "  ", "P   two."]},
        {"id": "b", "level": 1, "sentences": ["S1.", "S2."]},
        {"id": "b", "level": 2, "sentences": [["S1.", "S2."], ["S3."], []]},
    )
    docs = read_file("docs.jsonl", data, JSONL)
    assert [(d.external_id, d.level, d.line) for d in docs] == [("a", "adv", 1), ("a", "ele", 2), ("b", "1", 3), ("b", "2", 4)]
    assert docs[0].title == "The Title"
    assert docs[0].paragraphs == ["Para one. Two.", "Para two."]
    assert docs[1].paragraphs == ["P one.", "P two."]
    assert docs[2].sentences == [["S1.", "S2."]]
    assert docs[3].sentences == [["S1.", "S2."], ["S3."]]


def test_jsonl_skips_blank_lines_and_keeps_line_numbers():
    docs = read_file("docs.jsonl", jsonl("", {"id": "a", "level": "adv", "text": "Hi."}, "  "), JSONL)
    assert [d.line for d in docs] == [2]


def test_jsonl_escaped_text_is_cleaned_like_raw_text():
    """JSON escapes are decoded after cleaning ran on the raw line, so they must still come out clean."""
    record = {"id": "a", "level": "adv", "sentences": ["Cafe\u0301 it\u0019s fine.", "Bad\u0000byte."]}
    [doc] = read_file("escaped.jsonl", json.dumps(record).encode(), JSONL)
    assert doc.sentences == [["Caf\u00e9 it\u2019s fine.", "Badbyte."]]


# --- bad input -------------------------------------------------------------------------------


def test_file_over_size_limit():
    err = read_error("big-adv.txt", b"x" * 101, ImportOptions(format="text", max_file_bytes=100))
    assert "over the limit" in str(err)


@pytest.mark.parametrize("fmt", ["text", "presplit", "csv", "jsonl"])
def test_empty_file_is_rejected(fmt):
    read_error("Empty-adv.txt", b"", ImportOptions(format=fmt))


def test_whitespace_only_text_file_is_rejected():
    err = read_error("Blank-adv.txt", b"  \n\t\n\r\n \xc2\xa0 \n", TEXT)
    assert "empty" in str(err)


def test_file_name_not_matching_pattern():
    err = read_error("nodash.txt", b"Some text.", TEXT)
    assert "does not match the pattern" in str(err)


def test_jsonl_invalid_json_reports_line_3():
    good = {"id": "a", "level": "adv", "text": "Hi."}
    err = read_error("broken.jsonl", jsonl(good, good | {"level": "ele"}, '{"id": "a", "level": '), JSONL)
    assert err.line == 3
    assert "invalid JSON" in str(err)


def test_jsonl_line_that_is_a_list_is_rejected():
    err = read_error("list.jsonl", jsonl({"id": "a", "level": "adv", "text": "Hi."}, ["a", "adv", "Hi."]), JSONL)
    assert err.line == 2
    assert "JSON object" in str(err)


def test_jsonl_missing_level_names_the_field():
    err = read_error("nolevel.jsonl", jsonl({"id": "a", "text": "Hi."}), JSONL)
    assert (err.line, err.field) == (1, "level")


def test_jsonl_text_and_sentences_together_are_rejected():
    err = read_error("both.jsonl", jsonl({"id": "a", "level": "adv", "text": "Hi.", "sentences": ["Hi."]}), JSONL)
    assert err.line == 1
    assert "exactly one" in str(err)


@pytest.mark.parametrize("sentences", ["Hi.", [1, 2], [["Hi."], "There."], {"a": "Hi."}])
def test_jsonl_sentences_of_wrong_type_are_rejected(sentences):
    err = read_error("types.jsonl", jsonl({"id": "a", "level": "adv", "sentences": sentences}), JSONL)
    assert (err.line, err.field) == (1, "sentences")


def test_options_reject_unknown_format():
    with pytest.raises(ValueError, match="unknown format"):
        ImportOptions(format="xml")


def test_options_reject_invalid_regex():
    with pytest.raises(ValueError, match="filename_pattern"):
        ImportOptions(filename_pattern=r"^(?P<id>[a-z+$")
    with pytest.raises(ValueError, match="level_header_pattern"):
        ImportOptions(level_header_pattern=r"(unclosed")
