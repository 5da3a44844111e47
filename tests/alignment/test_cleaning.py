"""Unit tests for decoding and cleaning uploaded bytes (no database)."""

from __future__ import annotations

import pytest

from alignment.importing.cleaning import CleaningReport, ImportFormatError, clean_text, decode_bytes

# A legacy Windows (cp1252) article: mostly plain English, with the accented
# letters and curly punctuation that such files really contain.
LEGACY_TEXT = (
    "The caf\u00e9 on the corner serves a na\u00efve espresso. Her r\u00e9sum\u00e9 was \u201cimpressive\u201d "
    "and she said it\u2019s fine \u2013 truly.\n"
    "Most of the article is plain English prose about the weather, the city council and the new tram line, "
    "which will connect the harbour with the university once construction is finished in three years.\n"
    "We met at the caf\u00e9 again; the d\u00e9cor was \u2018simple\u2019 but charming.\n"
)
MOJIBAKE_MARKERS = ("\ufffd", "\u00c3", "\u00e2\u20ac", "\u010f", "\u0155", "\u010d")  # �, Ã, â€, ď, ŕ, č


# --- decode_bytes -----------------------------------------------------------------------------


def test_utf8_bytes_decode_unchanged_without_bom():
    text, report = decode_bytes("It\u2019s a caf\u00e9.".encode(), file="a.txt")
    assert text == "It\u2019s a caf\u00e9."
    assert report.encoding == "utf-8"
    assert report.had_bom is False


def test_utf8_bom_is_detected_and_stripped():
    text, report = decode_bytes(b"\xef\xbb\xbf" + "It\u2019s fine.".encode(), file="a.txt")
    assert text == "It\u2019s fine."
    assert not text.startswith("\ufeff")
    assert report.had_bom is True
    assert report.encoding == "utf-8"


def test_utf16_with_bom_decodes_via_detection():
    text, report = decode_bytes("It\u2019s a caf\u00e9 in Z\u00fcrich.".encode("utf-16"), file="a.txt")
    assert text == "It\u2019s a caf\u00e9 in Z\u00fcrich."
    assert "utf_16" in report.encoding.replace("-", "_").lower()


def test_legacy_cp1252_file_decodes_to_correct_characters():
    """Bytes such as caf\\xe9 na\\xefve r\\xe9sum\\xe9 \\x92 must come back as café naïve résumé ’."""
    data = LEGACY_TEXT.encode("cp1252")
    assert b"caf\xe9" in data and b"na\xefve" in data and b"it\x92s" in data
    text, report = decode_bytes(data, file="legacy.txt")
    assert report.encoding != "utf-8"
    for word in ("caf\u00e9", "r\u00e9sum\u00e9", "it\u2019s", "\u201cimpressive\u201d", "d\u00e9cor", "\u2018simple\u2019"):
        assert word in text
    assert "na\u00efve" in text  # cp1250 would give "naďve"
    assert not any(marker in text for marker in MOJIBAKE_MARKERS), text
    assert text == LEGACY_TEXT


def test_legacy_file_without_ambiguous_letters_decodes_without_mojibake():
    """é and the curly quotes are the same bytes in every Windows Latin code page, so detection gets them right."""
    sample = LEGACY_TEXT.replace("na\u00efve", "strong")
    text, _ = decode_bytes(sample.encode("cp1252"), file="legacy.txt")
    assert text == sample
    assert not any(marker in text for marker in MOJIBAKE_MARKERS)


def test_binary_with_nul_bytes_is_rejected_naming_the_file():
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\xff\xfe"
    with pytest.raises(ImportFormatError) as info:
        decode_bytes(data, file="picture-adv.txt")
    err = info.value
    assert err.file == "picture-adv.txt"
    assert "picture-adv.txt" in str(err)
    assert "NUL" in str(err)
    assert err.line == 1


# --- clean_text -------------------------------------------------------------------------------


def test_clean_text_normalises_to_nfc():
    report = CleaningReport()
    cleaned = clean_text("cafe\u0301 re\u0301sume\u0301", report)
    assert cleaned == "caf\u00e9 r\u00e9sum\u00e9"
    assert len(cleaned) == len("caf\u00e9 r\u00e9sum\u00e9")


def test_clean_text_turns_crlf_and_cr_into_lf():
    report = CleaningReport()
    assert clean_text("one\r\ntwo\rthree\n\r\nfour", report) == "one\ntwo\nthree\n\nfour"
    assert report.control_characters_removed == 0


def test_clean_text_removes_and_counts_control_characters():
    report = CleaningReport()
    cleaned = clean_text("a\x00b\x07c\x7fd\x85e\u200bf\ufeffg\x0bh", report)
    assert cleaned == "abcdefgh"
    assert report.control_characters_removed == 7
    assert report.punctuation_repaired == 0


def test_clean_text_repairs_truncated_punctuation_and_counts_it():
    report = CleaningReport()
    cleaned = clean_text("It\x19s \x1cgood\x1d \x13 really\x14yes \x18ok\x19", report)
    assert cleaned == "It\u2019s \u201cgood\u201d \u2013 really\u2014yes \u2018ok\u2019"
    assert report.punctuation_repaired == 7
    assert report.control_characters_removed == 0


def test_clean_text_repair_disabled_removes_truncated_punctuation():
    report = CleaningReport()
    cleaned = clean_text("It\x19s \x1cgood\x1d a\x13b", report, repair_punctuation=False)
    assert cleaned == "Its good ab"
    assert "\u2019" not in cleaned and "\u201c" not in cleaned
    assert report.punctuation_repaired == 0
    assert report.control_characters_removed == 4


def test_clean_text_folds_inline_whitespace_but_keeps_line_breaks():
    report = CleaningReport()
    cleaned = clean_text("  one \t two\u00a0 three  \n\n   four\t\tfive   ", report)
    assert cleaned == "one two three\n\nfour five"


def test_clean_text_counts_accumulate_on_the_same_report():
    report = CleaningReport()
    clean_text("a\x00b\x19", report)
    clean_text("c\x01d\x1c", report)
    assert report.control_characters_removed == 2
    assert report.punctuation_repaired == 2


def test_cleaning_report_merge_adds_counts_only():
    first = CleaningReport(encoding="cp1252", had_bom=False, control_characters_removed=1, punctuation_repaired=2)
    first.merge(CleaningReport(encoding="utf-8", had_bom=True, control_characters_removed=3, punctuation_repaired=4))
    assert (first.control_characters_removed, first.punctuation_repaired) == (4, 6)
    assert (first.encoding, first.had_bom) == ("cp1252", False)
