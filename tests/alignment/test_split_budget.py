"""Sentence splitting has a time budget per document; past it, the fallback splitter finishes the document.

pysbd is thorough but slow on some text (a 5 MB upload once held a worker for 347 s of splitting).
The budget is checked between paragraphs and between the windows of a long paragraph; a clock
that advances by a fixed step per reading makes the tests independent of the machine's speed.
"""

from __future__ import annotations

import itertools

import pytest

from alignment.importing import segment
from alignment.importing.readers import ImportOptions
from alignment.importing.segment import fallback_sentence_starts, layout_from_paragraphs, split_sentences
from alignment.importing.service import corpus_import_files
from alignment.models import Document

PARAGRAPHS = [
    "The tram runs every ten minutes. Dr. Smith takes it to work. It is often late!",
    "“Why?” she asked. Nobody knew. 3 people waited.",
    "A third paragraph. With two sentences.",
]


@pytest.fixture
def clock(monkeypatch):
    """Each reading of the clock is one second later than the last."""
    ticks = itertools.count()
    monkeypatch.setattr(segment, "_now", lambda: float(next(ticks)))


def _sentences(layout) -> list[list[str]]:
    return [[s.text for s in p.sentences] for p in layout.paragraphs]


def test_within_the_budget_pysbd_splits_everything(clock) -> None:
    layout = layout_from_paragraphs(PARAGRAPHS, language="en", budget_seconds=1_000)
    assert layout.fallback_from_paragraph is None
    assert _sentences(layout) == _sentences(layout_from_paragraphs(PARAGRAPHS, language="en"))
    assert "Dr. Smith takes it to work." in _sentences(layout)[0]  # pysbd knows the abbreviation


def test_past_the_budget_the_fallback_splits_the_rest_and_says_from_where(clock) -> None:
    layout = layout_from_paragraphs(PARAGRAPHS, language="en", budget_seconds=2)
    assert layout.fallback_from_paragraph == 1
    first, second, third = _sentences(layout)
    assert "Dr. Smith takes it to work." in first  # split by pysbd, within the budget
    assert second == ["“Why?” she asked.", "Nobody knew.", "3 people waited."]
    assert third == ["A third paragraph.", "With two sentences."]
    # nothing is lost: every sentence is a span of the raw text
    assert all(layout.raw_text[s.char_start : s.char_end] == s.text for p in layout.paragraphs for s in p.sentences)


def test_the_budget_also_runs_out_inside_one_long_paragraph(clock) -> None:
    paragraph = " ".join(f"Sentence number {k} is here." for k in range(400))  # many pysbd windows
    assert len(paragraph) > 3 * segment.SEGMENT_WINDOW_CHARS
    spans = split_sentences(paragraph, language="en", deadline=3.0)
    assert [paragraph[s:e] for s, e in spans] == [f"Sentence number {k} is here." for k in range(400)]
    layout = layout_from_paragraphs([paragraph], language="en", budget_seconds=3)
    assert layout.fallback_from_paragraph == 0


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four… Five", ["One. ", "Two! ", "Three? ", "Four… ", "Five"]),
        ("He said “stop.” Then he left.", ["He said “stop.” ", "Then he left."]),
        ("Version 2.5 is out. 3 bugs remain.", ["Version 2.5 is out. ", "3 bugs remain."]),
        ("see e.g. the tram. it is late.", ["see e.g. the tram. it is late."]),  # no capital after: one sentence
        ("Über alles. Äpfel fallen.", ["Über alles. ", "Äpfel fallen."]),
        ("", [""]),
    ],
)
def test_the_fallback_splits_at_end_punctuation_before_a_capital(text, sentences) -> None:
    starts = fallback_sentence_starts(text)
    assert [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])] == sentences


@pytest.mark.django_db
def test_the_import_report_says_when_the_fallback_split_a_document(corpus, settings, clock) -> None:
    settings.IMPORT_SPLIT_BUDGET_SECONDS = 2
    text = "\n\n".join(PARAGRAPHS).encode()
    report = corpus_import_files(corpus=corpus, files=[("Tram-adv.txt", text)], options=ImportOptions(format="text"))
    [result] = report.files
    assert result.ok and result.documents_created == 1
    [warning] = [w for w in result.warnings if "split" in w]
    assert "took over 2 s" in warning and "from paragraph 2 on" in warning and "fallback splitter" in warning
    assert Document.objects.get(corpus=corpus).source["split_fallback_from_paragraph"] == 1
