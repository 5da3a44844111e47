"""A new corpus whose language was not given gets the one its text is in (py3langid, offline); a given one is kept."""

from __future__ import annotations

import html
import socket
from io import StringIO
from pathlib import Path

import py3langid
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from alignment import services
from alignment.importing import language as language_module
from alignment.importing.language import LANGUAGE_DETECT, UNDETERMINED, language_detect
from alignment.importing.models import ImportJob
from alignment.importing.readers import ImportOptions
from alignment.importing.workflow import CorpusTarget, corpus_import_and_queue
from alignment.models import Corpus, Sentence
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE

PATTERN = r"^(?P<id>.+)-(?P<level>[^-]+)$"
GERMAN_ADV = (
    "Der Stadtrat hat am Dienstag eine neue Straßenbahnlinie beschlossen. Sie verbindet den Hafen mit der Universität.\n"
    "\n"
    "Die Bauarbeiten beginnen im Frühling und dauern voraussichtlich drei Jahre. Die Anwohner begrüßten die Entscheidung.\n"
)
GERMAN_ELE = (
    "Die Stadt baut eine neue Straßenbahn. Sie fährt vom Hafen zur Universität.\n"
    "\n"
    "Die Arbeit fängt im Frühling an. Sie dauert drei Jahre. Die Leute freuen sich.\n"
)


def _import(owner, files: list[tuple[str, str]], *, name: str = "Detected", language: str = LANGUAGE_DETECT):
    return corpus_import_and_queue(
        target=CorpusTarget(name=name, language=language, owner=owner),
        files=[(file, text.encode()) for file, text in files],
        options=ImportOptions(language=language, filename_pattern=PATTERN),
        for_user=owner, embed=False, align=False,
    )  # fmt: skip


def test_german_text_in_a_new_corpus_without_a_language_is_detected_as_german(owner):
    outcome = _import(owner, [("Tram-adv.txt", GERMAN_ADV), ("Tram-ele.txt", GERMAN_ELE)])
    assert outcome.corpus.language == "de" and Corpus.objects.get(name="Detected").language == "de"
    assert outcome.report.language_note.startswith("language detected from the text: 'de' (confidence 0.9")
    assert outcome.report.documents_created == 2  # the files read for the sample are imported too, not lost


def test_english_text_in_a_new_corpus_without_a_language_is_detected_as_english(owner):
    outcome = _import(owner, [("Tram-adv.txt", SAMPLE_ADV), ("Tram-ele.txt", SAMPLE_ELE)])
    assert Corpus.objects.get(name="Detected").language == "en"
    assert "'en'" in outcome.report.language_note and outcome.report.documents_created == 2


def test_a_language_given_explicitly_is_kept_whatever_the_text(owner):
    outcome = _import(owner, [("Tram-adv.txt", GERMAN_ADV)], language="en")
    assert Corpus.objects.get(name="Detected").language == "en" and outcome.report.language_note == ""


def test_an_existing_corpus_keeps_its_language_when_none_is_given(owner):
    services.corpus_get_or_create(name="Detected", language="de", owner=owner)
    outcome = _import(owner, [("Tram-adv.txt", SAMPLE_ADV)])
    assert Corpus.objects.get(name="Detected").language == "de" and outcome.report.documents_created == 1
    assert "'de'" in outcome.report.language_note


def test_too_little_text_leaves_the_language_undetermined_with_a_note(owner):
    outcome = _import(owner, [("Tram-adv.txt", "Ja. Nein.")])
    assert Corpus.objects.get(name="Detected").language == UNDETERMINED
    assert "not detected" in outcome.report.language_note and "too few" in outcome.report.language_note


def test_detection_is_unsure_about_mixed_text():
    mixed = language_detect([GERMAN_ADV + GERMAN_ELE, SAMPLE_ADV + SAMPLE_ELE])
    assert mixed.code == UNDETERMINED and mixed.confidence < 0.95 and "mixed" in mixed.note
    assert language_detect([GERMAN_ADV]).code == "de" and language_detect([SAMPLE_ADV]).code == "en"


def test_detection_reads_only_a_bounded_sample():
    assert language_detect(["x" * 30_000, GERMAN_ADV]).code == UNDETERMINED  # the German text lies past the sample


@pytest.mark.django_db(transaction=True)
def test_the_import_page_detects_the_language_and_its_report_names_it(client, owner, run_worker):
    client.force_login(owner)
    form = {"corpus_name": "Wetter", "language": "", "format": "text", "paragraph_mode": "blank", "filename_pattern": PATTERN,
            "pairing": "all", "files": [SimpleUploadedFile("Tram-adv.txt", GERMAN_ADV.encode()),
                                        SimpleUploadedFile("Tram-ele.txt", GERMAN_ELE.encode())]}  # fmt: skip
    assert client.post(reverse("alignment:corpus_import"), form).status_code == 302
    job = ImportJob.objects.get()
    run_worker(["imports"])
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert Corpus.objects.get(name="Wetter").language == "de"
    page = html.unescape(client.get(reverse("alignment:import_job", args=[job.pk])).content.decode())
    assert "Language detected from the text: 'de' (confidence" in page


def test_the_import_command_detects_the_language_when_given_empty(owner, tmp_path: Path):
    (tmp_path / "Tram-adv.txt").write_text(GERMAN_ADV)
    out = StringIO()
    call_command("import_corpus", str(tmp_path), corpus="Wetter", language="", owner="owner", no_embed=True, no_align=True, stdout=out)
    corpus = Corpus.objects.get(name="Wetter")
    assert corpus.language == "de" and "Language detected from the text: 'de'" in out.getvalue()
    assert Sentence.objects.filter(document__corpus=corpus).count() == 4


def test_detection_is_offline_and_its_model_ships_in_the_wheel(monkeypatch):
    model = Path(py3langid.__file__).parent / language_module.MODEL_FILE
    assert model.is_file() and model.stat().st_size > 1_000_000

    def no_network(*args, **kwargs):
        raise AssertionError("language detection tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    language_module._identifier.cache_clear()
    language_module.language_codes.cache_clear()
    assert language_detect([GERMAN_ADV]).code == "de"
