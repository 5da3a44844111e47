"""Acceptance on real files: all of OneStopEnglish (../shared/data, not shipped with the project).

Opt-in by nature: it runs whenever ../shared/data/onestopenglish is beside the
checkout (as in CI) and is skipped, saying so, on a user's clone without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files, import_paths
from alignment.models import Document, DocumentPair, Sentence

ONESTOPENGLISH = Path(__file__).resolve().parents[3] / "shared" / "data" / "onestopenglish"

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not ONESTOPENGLISH.exists(), reason=f"real-data acceptance test: {ONESTOPENGLISH} is absent"),
]

HEADER = re.compile(rb"^(advanced|intermediate|elementary)$", re.IGNORECASE)


def _expected_paragraphs(path: Path) -> int:
    lines = [line.strip(b" \t\r\n\xef\xbb\xbf" + bytes(range(32))) for line in path.read_bytes().split(b"\n")]
    lines = [line for line in lines if line]
    return len(lines) - (1 if lines and HEADER.match(lines[0]) else 0)


@pytest.fixture(scope="module")
def imported(django_db_setup, django_db_blocker):
    from django.contrib.auth import get_user_model

    from alignment.services import corpus_get_or_create

    with django_db_blocker.unblock():
        owner = get_user_model().objects.create_user("ose-owner")
        corpus, _ = corpus_get_or_create(name="OneStopEnglish", language="en", owner=owner)
        options = ImportOptions(format="text", paragraph_mode="line", drop_level_header=True)
        paths = import_paths(ONESTOPENGLISH, options)
        report = corpus_import_files(
            corpus=corpus, files=[(str(p.relative_to(ONESTOPENGLISH)), p.read_bytes()) for p in paths], options=options
        )
        yield corpus, report, paths
        Document.objects.filter(corpus=corpus).delete()
        corpus.delete()
        owner.delete()


def test_all_567_documents_import_and_form_189_times_3_pairs(imported, django_db_blocker):
    corpus, report, paths = imported
    assert len(paths) == 567
    assert report.errors == []
    with django_db_blocker.unblock():
        assert Document.objects.filter(corpus=corpus).count() == 567
        assert Document.objects.filter(corpus=corpus).values("external_id").distinct().count() == 189
        assert DocumentPair.objects.filter(corpus=corpus).count() == 189 * 3
        levels = set(DocumentPair.objects.filter(corpus=corpus).values_list("complex_document__level", "simple_document__level"))
    assert levels == {("adv", "int"), ("adv", "ele"), ("int", "ele")}
    # The source has one copy-paste slip: Royal Baby-ele.txt holds the Skydiver text. It is kept and reported.
    assert any("Royal Baby" in w and "Skydiver" in w for w in report.warnings)


def test_paragraph_counts_match_the_files(imported, django_db_blocker):
    corpus, _, paths = imported
    with django_db_blocker.unblock():
        stored = {(d.source["file"]): d.paragraphs.count() for d in Document.objects.filter(corpus=corpus).prefetch_related("paragraphs")}
    expected = {str(p.relative_to(ONESTOPENGLISH)): _expected_paragraphs(p) for p in paths}
    assert stored == expected


def test_no_mojibake_and_no_control_characters(imported, django_db_blocker):
    corpus, _, _ = imported
    with django_db_blocker.unblock():
        texts = list(Sentence.objects.filter(document__corpus=corpus).values_list("text", flat=True))
        amazon = Document.objects.get(corpus=corpus, external_id="Amazon", level="adv")
    joined = "\n".join(texts)
    assert not re.search(r"â€|Ã.|\ufffd", joined), "mojibake in stored sentences"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", joined)
    source = (ONESTOPENGLISH / "adv" / "Amazon-adv.txt").read_bytes().decode("utf-8-sig")
    assert "what’s the first thing" in amazon.raw_text
    assert amazon.raw_text.count("’") == source.count("’") > 0
