"""Sentence splitting: no fragments (domains, lone punctuation, lost quotes), and the faster paths
(abbreviation search, stretches without punctuation) giving exactly pysbd's boundaries."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pysbd
import pytest

from alignment.importing.readers import ImportOptions, read_file
from alignment.importing.segment import (
    MAX_SENTENCE_CHARS,
    SEGMENT_WINDOW_CHARS,
    _Segmenter,
    _segmenter,
    layout_from_paragraphs,
    split_sentences,
)

ONESTOPENGLISH = Path(__file__).resolve().parents[3] / "shared" / "data" / "onestopenglish"
HAS_LETTER = re.compile(r"[^\W\d_]")


def _sentences(paragraph: str) -> list[str]:
    return [paragraph[start:end] for start, end in split_sentences(paragraph, language="en")]


def _keeps_every_character(paragraph: str, sentences: list[str]) -> bool:
    return "".join(sentences).replace(" ", "") == "".join(paragraph.split())


# --- fragments from the issue ------------------------------------------------------------------


@pytest.mark.parametrize(
    "paragraph",
    [
        "Until now, the differences were easy to see in every internet address by the use of .com, .gov and 20 other categories.",
        "Together with many other disputed claims to names, including .patagonia, the issue goes to the heart of the debate.",
        "Amazon has applied for many new domains, including .shop, .song, .book and .kindle. But the one that has caused most discussion is .amazon.",
        "Brazil and Peru have asked for the .amazon application to be withdrawn.",
        "Amazon has applied for domains, including “.shop ”, “.song”, “.book” and “.kindle . But its application is contested.",
        "See www.example.org for details and write to jo.smith@example.com if you wish.",
        "So half of Amazon. co.uk’s top ten is filled by colouring books for adults.",
    ],
)
def test_a_domain_like_token_does_not_end_a_sentence(paragraph):
    sentences = _sentences(paragraph)
    assert all(s[0].isupper() or s[0] in "“" for s in sentences), sentences
    assert not any(re.match(r"\.?(com|org|gov|shop|song|book|kindle|amazon|patagonia|co\.uk)\b", s) for s in sentences)
    assert _keeps_every_character(paragraph, sentences)


def test_the_domain_examples_of_the_issue_become_whole_sentences():
    paragraph = ("Together with many other disputed claims to names, including .patagonia, the issue goes to the heart of "
                 "debates about the internet. Until now, the difference was easy to see by the use of .com, .gov and 20 "
                 "other categories.")  # fmt: skip
    assert _sentences(paragraph) == [
        (
            "Together with many other disputed claims to names, including .patagonia, the issue goes to the heart of "
            "debates about the internet."
        ),
        "Until now, the difference was easy to see by the use of .com, .gov and 20 other categories.",
    ]


def test_real_sentence_ends_around_domains_still_split():
    assert _sentences("Visit example.com today. Then write to us. Everything is at www.bbc.co.uk. It works.") == [
        "Visit example.com today.", "Then write to us.", "Everything is at www.bbc.co.uk.", "It works."
    ]  # fmt: skip


def test_a_closing_quote_on_its_own_joins_the_sentence_before_it():
    # The quote opened in an earlier paragraph; pysbd makes the closing quote a "sentence" of its own.
    paragraph = "It has been an honour to lead your club. I have treasured my time as manager of Manchester United.”"
    assert [s.sent for s in pysbd.Segmenter(language="en", clean=False, char_span=True).segment(paragraph)][-1] == "”"
    assert _sentences(paragraph) == [
        "It has been an honour to lead your club.", "I have treasured my time as manager of Manchester United.”"
    ]  # fmt: skip


@pytest.mark.parametrize("tail", ["”", ".", "!!", "…", " - ", "'", "*"])
def test_a_piece_with_no_letter_or_digit_never_becomes_a_sentence(tail):
    paragraph = f"He arrived on Monday. She left on Tuesday. {tail}"
    sentences = _sentences(paragraph)
    assert all(re.search(r"[^\W_]", s) for s in sentences)
    assert _keeps_every_character(paragraph, sentences)


def test_a_leading_piece_with_no_letter_joins_the_sentence_after_it():
    paragraph = "” He arrived on Monday. She left on Tuesday."
    sentences = _sentences(paragraph)
    assert sentences[0].startswith("”") and len(sentences) == 2


def test_a_piece_starting_with_a_comma_continues_the_sentence():
    assert _sentences("It contained the single Where Are We Now?, which gave him his first UK top 10 hit since 1993.") == [
        "It contained the single Where Are We Now?, which gave him his first UK top 10 hit since 1993."
    ]


def test_a_question_whose_quotes_were_lost_keeps_its_speech_tag():
    assert _sentences("What are you doing? he said. Nobody answered.") == ["What are you doing? he said.", "Nobody answered."]
    assert _sentences("What are you doing? He left.") == ["What are you doing?", "He left."]


def test_a_list_number_joins_the_item_after_it():
    assert _sentences("Choose the best answer according to the text. 1. Who are the chronically poor?") == [
        "Choose the best answer according to the text.", "1. Who are the chronically poor?"
    ]  # fmt: skip


def test_spans_index_the_raw_text_after_merging():
    paragraphs = ["Use .com, .gov and .org. Then stop. ”", "” Why? she asked. 1. Fine.", "***"]
    layout = layout_from_paragraphs(paragraphs, language="en")
    for paragraph in layout.paragraphs:
        for sentence in paragraph.sentences:
            assert layout.raw_text[sentence.char_start : sentence.char_end] == sentence.text
            assert HAS_LETTER.search(sentence.text)
    assert [len(p.sentences) for p in layout.paragraphs] == [2, 2, 0]


# --- the faster paths give pysbd's own boundaries ----------------------------------------------

WORDS = ["the", "know", "no", "No", "NO", "nos", "a", "A", "al", "art", "Art", "p", "pp", "St", "st", "Mr", "MR",
         "Dr", "Gen", "capt", "etc", "vs", "U.S", "e.g", "i.e", "Ph.D", "ſt", "\u212aG", "ıd", "day", "house", "3", "42"]  # fmt: skip
TAILS = [". ", " ", ", ", "? ", "! ", ".", ": ", ".” ", ". (", " (", ") ", "-"]


def _random_text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(TAILS) for _ in range(words))


def _plain_segmenter(language: str) -> _Segmenter:
    segmenter = _Segmenter(language=language, clean=False, char_span=True)
    segmenter.language_module = pysbd.languages.Language.get_language_code(language)
    return segmenter


@pytest.mark.parametrize("language", ["en", "fr", "de"])
def test_the_fast_abbreviation_search_gives_pysbds_sentences(language):
    rng = random.Random(7)
    plain, fast = _plain_segmenter(language), _segmenter(language)
    for _ in range(300):
        text = _random_text(rng, rng.randint(3, 60))
        assert [(s.sent, s.start) for s in fast.segment(text)] == [(s.sent, s.start) for s in plain.segment(text)], text


def test_english_uses_the_fast_abbreviation_search():
    assert _segmenter("en").language_module is not pysbd.languages.Language.get_language_code("en")


@pytest.mark.parametrize("language", ["en", "de", "fr", "el", "hi"])
def test_pysbd_returns_a_stretch_without_candidate_characters_whole(language):
    """What the splitter relies on to skip pysbd for such stretches."""
    rng = random.Random(11)
    segmenter = _plain_segmenter(language)
    candidate = _segmenter(language).candidate_boundary
    alphabet = list("abcdefgh ABCI 0123 ,;'“”\"(•–—/&%") + ["ſ", "é", "ü", " "]
    checked = 0
    while checked < 200:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(5, 300))).strip()
        if not text or candidate.search(text):
            continue
        checked += 1
        assert len(segmenter.segment(text)) == 1, text


def test_a_long_stretch_without_punctuation_is_cut_as_before_and_sentences_after_it_are_pysbds():
    stretch = " ".join(f"word{i}" for i in range(3_000))
    ending = " ".join(f"Mr. Smith met Dr. Jones on day {i} of May." for i in range(100))
    paragraph = f"{stretch} {ending}"
    sentences = _sentences(paragraph)
    assert max(len(s) for s in sentences) <= MAX_SENTENCE_CHARS and len(paragraph) > 5 * SEGMENT_WINDOW_CHARS
    assert sentences[-99:] == [f"Mr. Smith met Dr. Jones on day {i} of May." for i in range(1, 100)]
    assert _keeps_every_character(paragraph, sentences)


def test_random_paragraphs_split_into_ordered_bounded_spans_keeping_every_character():
    rng = random.Random(3)
    for _ in range(60):
        paragraph = _random_text(rng, rng.randint(1, 900)).strip()
        spans = split_sentences(paragraph, language="en")
        assert all(start < end <= next_start for (start, end), (next_start, _) in zip(spans, spans[1:] + [(len(paragraph), 0)]))
        sentences = [paragraph[start:end] for start, end in spans]
        assert all(s == s.strip() and len(s) <= MAX_SENTENCE_CHARS and re.search(r"[^\W_]", s) for s in sentences)
        assert _keeps_every_character(paragraph, sentences) or not re.search(r"\w", paragraph), paragraph


# --- on the real corpus, when it is beside the checkout ------------------------------------------


@pytest.mark.shared_data
@pytest.mark.skipif(not ONESTOPENGLISH.exists(), reason=f"real-data test: {ONESTOPENGLISH} is absent")
def test_onestopenglish_has_no_fragment_sentences():
    options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
    paths = sorted(ONESTOPENGLISH.rglob("*.txt"))
    assert len(paths) == 567
    fragments = []
    for path in paths:
        (document,) = read_file(path.name, path.read_bytes(), options)
        layout = layout_from_paragraphs(document.paragraphs, language="en")
        for paragraph, text in zip(layout.paragraphs, document.paragraphs):
            sentences = [s.text for s in paragraph.sentences]
            assert _keeps_every_character(text, sentences), path.name
            fragments += [(path.name, s) for s in sentences if not HAS_LETTER.search(s) or re.match(r"\.?(com|org|gov)\b", s)]
            fragments += [(path.name, s) for s in sentences if len(s) < 3]
    assert fragments == []
