"""Database tests of corpus_import_files: structure, idempotence, per-file atomicity and pairing."""

from __future__ import annotations

import json

import pytest

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import Corpus, Document, DocumentPair, Paragraph, Sentence
from alignment.services import corpus_get_or_create, level_sort_key

ADV = (
    "The city council approved a new tram line on Tuesday. It will connect the harbour with the university.\n"
    "\n"
    "Construction begins in spring. Residents welcomed the decision.\n"
)
INT = "The council said yes to a new tram line. It goes from the harbour to the university.\n\nWork starts in spring.\n"
ELE = "The city will build a tram line.\n\nWork starts in spring. People are happy.\n"


def jsonl(*records) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode()


def import_files(corpus, fmt, files, **options):
    return corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format=fmt, **options))


def assert_consistent(document: Document) -> None:
    sentences = list(document.sentences.order_by("index"))
    assert [s.index for s in sentences] == list(range(len(sentences)))
    for s in sentences:
        assert document.raw_text[s.char_start : s.char_end] == s.text
    for paragraph in document.paragraphs.order_by("index"):
        in_paragraph = [s.index_in_paragraph for s in sentences if s.paragraph_id == paragraph.pk]
        assert in_paragraph == list(range(len(in_paragraph)))
        assert in_paragraph, "every paragraph has a sentence"


def structure(document: Document) -> list[list[str]]:
    return [[s.text for s in p.sentences.order_by("index_in_paragraph")] for p in document.paragraphs.order_by("index")]


# --- the four formats ------------------------------------------------------------------------


def test_text_import_builds_paragraphs_and_sentences(corpus):
    report = import_files(corpus, "text", [("Tram-adv.txt", ADV.encode()), ("Tram-ele.txt", ELE.encode())])
    assert not report.errors
    assert (report.documents_created, report.sentences_created, report.pairs_created) == (2, 7, 1)
    adv = Document.objects.get(corpus=corpus, external_id="Tram", level="adv")
    assert structure(adv) == [
        ["The city council approved a new tram line on Tuesday.", "It will connect the harbour with the university."],
        ["Construction begins in spring.", "Residents welcomed the decision."],
    ]
    assert adv.source["file"] == "Tram-adv.txt"
    for document in Document.objects.filter(corpus=corpus):
        assert_consistent(document)


def test_presplit_import_keeps_given_sentences(corpus):
    data = b"One sentence. Not split.\nTwo.\n\nThree.\n"
    report = import_files(corpus, "presplit", [("Moon-ele.txt", data)])
    assert not report.errors
    doc = Document.objects.get(corpus=corpus)
    assert structure(doc) == [["One sentence. Not split.", "Two."], ["Three."]]
    assert Paragraph.objects.filter(document=doc).count() == 2
    assert_consistent(doc)


def test_csv_import_creates_one_document_per_article_and_level(corpus):
    data = b"id,adv,ele\nA,A one. A two.,A simple.\nA,A three.,\nB,B adv.,B ele.\n"
    report = import_files(corpus, "csv", [("arts.csv", data)])
    assert not report.errors
    assert report.documents_created == 4
    assert Sentence.objects.filter(document__corpus=corpus).count() == 6
    a_adv = Document.objects.get(corpus=corpus, external_id="A", level="adv")
    assert structure(a_adv) == [["A one.", "A two."], ["A three."]]
    assert DocumentPair.objects.filter(corpus=corpus).count() == 2
    for document in Document.objects.filter(corpus=corpus):
        assert_consistent(document)


def test_jsonl_import_with_all_three_content_keys(corpus):
    data = jsonl(
        {"id": "a", "level": "adv", "title": "Trams", "text": ADV},
        {"id": "a", "level": "int", "paragraphs": INT.split("\n\n")},
        {"id": "a", "level": "ele", "sentences": [["The city will build a tram line."], ["Work starts.", "People are happy."]]},
    )
    report = import_files(corpus, "jsonl", [("trams.jsonl", data)])
    assert not report.errors
    assert report.documents_created == 3
    assert Document.objects.get(corpus=corpus, level="adv").title == "Trams"
    assert Document.objects.get(corpus=corpus, level="int").title == "a"
    ele = Document.objects.get(corpus=corpus, level="ele")
    assert structure(ele) == [["The city will build a tram line."], ["Work starts.", "People are happy."]]
    assert Sentence.objects.filter(document__corpus=corpus).count() == 4 + 3 + 3
    for document in Document.objects.filter(corpus=corpus):
        assert_consistent(document)


def test_bom_utf8_file_keeps_curly_apostrophe(corpus):
    data = b"\xef\xbb\xbf" + "It\u2019s a new line. The mayor\u2019s plan won.\n".encode()
    report = import_files(corpus, "text", [("Bom-adv.txt", data)])
    assert not report.errors
    doc = Document.objects.get(corpus=corpus)
    assert [s.text for s in doc.sentences.order_by("index")] == ["It\u2019s a new line.", "The mayor\u2019s plan won."]
    assert not doc.raw_text.startswith("\ufeff")
    assert doc.source["had_bom"] is True


def test_repaired_punctuation_is_reported_and_stored(corpus):
    report = import_files(corpus, "text", [("Fix-adv.txt", b"It\x19s \x1cnew\x1d.\x00 Yes.")])
    assert not report.errors
    assert (report.punctuation_repaired, report.control_characters_removed) == (3, 1)
    doc = Document.objects.get(corpus=corpus)
    assert doc.raw_text == "It\u2019s \u201cnew\u201d. Yes."
    assert doc.source["punctuation_repaired"] == 3


# --- idempotence and atomicity ---------------------------------------------------------------


def test_reimporting_same_files_changes_nothing(corpus):
    files = [("Tram-adv.txt", ADV.encode()), ("Tram-int.txt", INT.encode()), ("Tram-ele.txt", ELE.encode())]
    first = import_files(corpus, "text", files)
    assert (first.documents_created, first.pairs_created) == (3, 3)
    counts = (Document.objects.count(), Sentence.objects.count(), Paragraph.objects.count(), DocumentPair.objects.count())
    again = import_files(corpus, "text", files)
    assert not again.errors
    assert (again.documents_created, again.documents_unchanged, again.sentences_created, again.pairs_created) == (0, 3, 0, 0)
    assert (Document.objects.count(), Sentence.objects.count(), Paragraph.objects.count(), DocumentPair.objects.count()) == counts


def test_malformed_jsonl_row_stores_nothing_from_that_file(corpus):
    bad = jsonl({"id": "bad1", "level": "adv", "text": "A fine first line."}, '{"id": "bad1", "level": "ele", "text": ')
    good = jsonl({"id": "good", "level": "adv", "text": "A good document."})
    report = import_files(corpus, "jsonl", [("bad.jsonl", bad), ("good.jsonl", good)])
    assert Document.objects.filter(corpus=corpus, external_id="bad1").count() == 0
    assert Document.objects.filter(corpus=corpus, external_id="good").count() == 1
    [error] = report.errors
    assert error.file == "bad.jsonl"
    assert "bad.jsonl, line 2" in error.error
    assert error.documents_created == 0
    assert report.documents_created == 1


def test_later_bad_document_rolls_back_earlier_documents_of_same_file(corpus):
    data = jsonl(
        {"id": "x", "level": "adv", "text": "This one is fine."},
        {"id": "x", "level": "ele", "text": "* * *\n\n- - -"},
    )
    report = import_files(corpus, "jsonl", [("partly.jsonl", data)])
    [error] = report.errors
    assert "partly.jsonl, line 2" in error.error
    assert "has no sentences" in error.error
    assert not Document.objects.filter(corpus=corpus).exists()
    assert not Sentence.objects.exists()


def test_document_without_sentences_is_an_error_and_stores_nothing(corpus):
    report = import_files(corpus, "text", [("Stars-adv.txt", b"* * *\n\n- - -\n")])
    [error] = report.errors
    assert "Stars-adv.txt" in error.error and "has no sentences" in error.error
    assert not Document.objects.filter(corpus=corpus).exists()
    assert not Paragraph.objects.exists()


def test_changed_content_under_same_id_and_level_is_refused(corpus):
    import_files(corpus, "text", [("Tram-adv.txt", ADV.encode())])
    old = Document.objects.get(corpus=corpus, external_id="Tram", level="adv")
    old_count = old.sentences.count()
    report = import_files(corpus, "text", [("Tram-adv.txt", b"Completely new text. Only two sentences.")])
    [error] = report.errors
    assert "Tram-adv.txt" in error.error and "different content" in error.error
    current = Document.objects.get(corpus=corpus, external_id="Tram", level="adv")
    assert current.pk == old.pk
    assert current.raw_text == old.raw_text
    assert current.sentences.count() == old_count == 4


def test_identical_text_under_another_id_is_stored_with_a_warning_naming_the_first(corpus):
    """Real corpora contain copy-paste slips (OneStopEnglish's Royal Baby-ele.txt is Skydiver-ele.txt):
    both documents are kept, since each is a level of its own article, and the report says so."""
    report = import_files(corpus, "text", [("First-adv.txt", ADV.encode()), ("Second-adv.txt", ADV.encode())])
    assert not report.errors
    [warning] = [w for f in report.files for w in f.warnings]
    assert "'First'" in warning and "Second-adv.txt" in warning
    assert sorted(Document.objects.filter(corpus=corpus).values_list("external_id", flat=True)) == ["First", "Second"]
    again = import_files(corpus, "text", [("Second-adv.txt", ADV.encode())])
    assert again.documents_unchanged == 1 and again.documents_created == 0


def test_nul_escape_in_jsonl_is_a_file_error_not_a_crash(corpus):
    """A JSON escape \\u0000 survives cleaning; it must not crash the import of the other files."""
    bad = jsonl({"id": "nul", "level": "adv", "sentences": ["Bad\u0000byte here.", "Fine."]})
    good = jsonl({"id": "good", "level": "adv", "text": "A good document."})
    report = import_files(corpus, "jsonl", [("nul.jsonl", bad), ("good.jsonl", good)])
    assert Document.objects.filter(corpus=corpus, external_id="good").exists()
    stored = Sentence.objects.filter(document__external_id="nul").values_list("text", flat=True)
    assert report.errors or list(stored) == ["Badbyte here.", "Fine."]


# --- pairing ---------------------------------------------------------------------------------


def three_levels(levels=("adv", "int", "ele")) -> bytes:
    texts = dict(zip(levels, (ADV, INT, ELE)))
    return jsonl(*({"id": "tram", "level": level, "text": text} for level, text in texts.items()))


def pairs(corpus) -> set[tuple[str, str]]:
    return {
        (p.complex_document.level, p.simple_document.level)
        for p in DocumentPair.objects.filter(corpus=corpus).select_related("complex_document", "simple_document")
    }


def test_all_pairing_pairs_every_two_levels_complex_first(corpus):
    report = import_files(corpus, "jsonl", [("t.jsonl", three_levels(("ele", "adv", "int")))])
    assert report.pairs_created == 3
    assert pairs(corpus) == {("adv", "int"), ("adv", "ele"), ("int", "ele")}


def test_adjacent_pairing_pairs_neighbouring_levels_only(owner):
    corpus, created = corpus_get_or_create(name="Adjacent", language="en", owner=owner, pairing="adjacent")
    assert created and corpus.pairing == Corpus.Pairing.ADJACENT
    report = import_files(corpus, "jsonl", [("t.jsonl", three_levels(("int", "ele", "adv")))])
    assert report.pairs_created == 2
    assert pairs(corpus) == {("adv", "int"), ("int", "ele")}


def test_adjacent_pairing_stays_adjacent_when_a_middle_level_arrives_later(owner):
    """adv and ele imported first pair with each other; once int arrives, adv→ele is no longer adjacent."""
    corpus, _ = corpus_get_or_create(name="Later", language="en", owner=owner, pairing="adjacent")
    import_files(corpus, "text", [("Tram-adv.txt", ADV.encode()), ("Tram-ele.txt", ELE.encode())])
    assert pairs(corpus) == {("adv", "ele")}
    import_files(corpus, "text", [("Tram-int.txt", INT.encode())])
    assert pairs(corpus) == {("adv", "int"), ("int", "ele")}


def test_numeric_levels_pair_lowest_number_as_complex(corpus):
    import_files(corpus, "jsonl", [("t.jsonl", three_levels(("10", "0", "2")))])
    assert pairs(corpus) == {("0", "2"), ("0", "10"), ("2", "10")}


def test_level_order_overrides_known_ranking(owner):
    corpus, _ = corpus_get_or_create(name="Ordered", language="en", owner=owner, level_order=["ele", "B1", "adv"])
    import_files(corpus, "jsonl", [("t.jsonl", three_levels(("adv", "B1", "ele")))])
    assert pairs(corpus) == {("ele", "B1"), ("ele", "adv"), ("B1", "adv")}
    assert sorted(["adv", "int", "B1", "ele"], key=level_sort_key(corpus)) == ["ele", "B1", "adv", "int"]


# --- corpus_get_or_create --------------------------------------------------------------------


@pytest.mark.parametrize("language", ["english", "EN", "e", "en_US", ""])
def test_corpus_get_or_create_rejects_bad_language_code(owner, language):
    with pytest.raises(ValueError, match="ISO 639"):
        corpus_get_or_create(name="Bad", language=language, owner=owner)
    assert not Corpus.objects.filter(name="Bad").exists()


def test_corpus_get_or_create_refuses_language_change(corpus, owner):
    same, created = corpus_get_or_create(name="Trams", language="en", owner=owner)
    assert (same.pk, created) == (corpus.pk, False)
    with pytest.raises(ValueError, match="language"):
        corpus_get_or_create(name="Trams", language="de", owner=owner)
    corpus.refresh_from_db()
    assert corpus.language == "en"
