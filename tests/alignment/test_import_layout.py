"""Paragraph layout detection (alignment/importing/layout.py) and the text reader's "auto" mode."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from alignment.importing.cleaning import clean_text, decode_bytes
from alignment.importing.layout import detect_paragraph_layout
from alignment.importing.readers import ImportOptions, read_file
from alignment.importing.service import corpus_import_files

ONESTOPENGLISH = Path(__file__).resolve().parents[3] / "shared" / "data" / "onestopenglish"

ONE_PER_LINE = (
    "Intermediate\n"
    "The city council approved a new tram line on Tuesday. It will connect the harbour with the university.\n"
    "Construction begins in spring and is expected to last three years.\n"
    "Critics argue that the cost, estimated at 400 million euros, is too high.\n"
    "“We will pay for this for decades,” one councillor said.\n"
)
WRAPPED = "\n\n".join(
    textwrap.fill("The council met on Tuesday and talked about the new tram line for a long time. " * 4, width=70) for _ in range(3)
)


def test_one_paragraph_per_line_without_blank_lines_is_line_mode_with_a_reason():
    guess = detect_paragraph_layout(ONE_PER_LINE)
    assert guess.paragraph_mode == "line"
    assert (
        guess.reason
        == "5 non-empty lines, no blank lines; 4 of 4 single line breaks follow a sentence end or a heading: each line is a paragraph"
    )


def test_wrapped_text_between_blank_lines_is_blank_mode():
    guess = detect_paragraph_layout(WRAPPED)
    assert guess.paragraph_mode == "blank" and guess.blank_breaks == 2
    assert (
        "; only 0 of 12 single line breaks follow a sentence end or a heading, the others fall mid-sentence (wrapped text)" in guess.reason
    )
    assert guess.reason.endswith(": a blank line separates paragraphs")


def test_a_stray_blank_line_among_one_paragraph_lines_is_still_line_mode():
    text = ONE_PER_LINE.replace("Construction", "\nConstruction") + "\n\n\n"  # OneStopEnglish: stray and trailing blank lines
    guess = detect_paragraph_layout(text)
    assert guess.paragraph_mode == "line" and guess.blank_breaks == 1 and "1 blank-line break;" in guess.reason


def test_short_headings_between_paragraph_lines_count_for_line_mode():
    paragraph = "Six months before his death, the designer wrote to the head of the church about his regrets and fears"
    text = "\n".join(f"{n} A heading\n{paragraph} and more words, which end without a full stop" for n in range(1, 5))
    assert detect_paragraph_layout(text).paragraph_mode == "line"


def test_a_line_ending_with_a_closing_quote_ends_a_sentence():
    text = "He said “stop.”\nShe said “go!”\nThey asked “why?”\nNobody answered."
    assert detect_paragraph_layout(text).joined_paragraph_like == 3


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no text"),
        ("Just one line without an end", "one line: both modes give one paragraph"),
        ("One.\n\nTwo.\n\nThree.", "3 lines, each followed by a blank line: both modes give the same 3 paragraphs"),
    ],
)
def test_texts_both_modes_read_alike_keep_blank_mode_and_say_so(text, reason):
    guess = detect_paragraph_layout(text)
    assert (guess.paragraph_mode, guess.reason, guess.modes_agree) == ("blank", reason, True)


def test_the_reader_in_auto_mode_uses_the_detected_mode_per_file():
    [lines] = read_file("Tram-adv.txt", ONE_PER_LINE.encode(), ImportOptions(paragraph_mode="auto", drop_level_header=True))
    [wrapped] = read_file("Tram-ele.txt", WRAPPED.encode(), ImportOptions(paragraph_mode="auto"))
    assert (lines.paragraph_mode, len(lines.paragraphs)) == ("line", 4)
    assert (wrapped.paragraph_mode, len(wrapped.paragraphs)) == ("blank", 3)
    assert lines.detected_layout.paragraph_mode == "line"


def test_an_explicit_mode_is_kept_even_when_the_detection_disagrees():
    [document] = read_file("Tram-adv.txt", ONE_PER_LINE.encode(), ImportOptions(paragraph_mode="blank"))
    assert document.paragraph_mode == "blank" and len(document.paragraphs) == 1
    assert document.detected_layout.paragraph_mode == "line"


def test_an_unknown_paragraph_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown paragraph mode 'lines'; choose one of auto, blank, line"):
        ImportOptions(paragraph_mode="lines")


def test_the_import_report_says_which_mode_each_text_file_was_read_in(corpus):
    files = [("Tram2-adv.txt", ONE_PER_LINE.encode()), ("Tram2-ele.txt", WRAPPED.encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(paragraph_mode="auto"))
    assert not report.errors
    assert sorted(report.paragraph_modes) == [("a blank line separates paragraphs", 1), ("each line is a paragraph", 1)]


@pytest.mark.skipif(not ONESTOPENGLISH.is_dir(), reason=f"the OneStopEnglish corpus is not at {ONESTOPENGLISH}")
def test_every_onestopenglish_file_is_detected_as_one_paragraph_per_line():
    files = sorted(ONESTOPENGLISH.glob("*/*.txt"))
    assert len(files) == 567
    found = {}
    for path in files:
        text, report = decode_bytes(path.read_bytes(), file=path.name)
        found[path.name] = detect_paragraph_layout(clean_text(text, report)).paragraph_mode
    assert {name for name, mode in found.items() if mode != "line"} == set()
