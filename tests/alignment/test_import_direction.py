"""Which side of an imported pair is complex: known level schemes, the page's level order, readability for unknown levels.

The issue: German CEFR files A2 and C2 imported from the browser made A2 the complex side (the old sort
key knew only adv/int/ele and numbers, and put unknown names in alphabetical order). These tests go the
browser import's way (the page's form, the staged job, the job's worker code) and the command line's.
"""

from __future__ import annotations

import csv
import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from alignment.importing.jobs import import_job_execute
from alignment.importing.models import ImportJob
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.models import Corpus, DocumentPair
from alignment.services import corpus_get_or_create
from tests.webapp.access_world import database_fingerprint

IMPORT = reverse("alignment:corpus_import")
DEPLAIN = Path(__file__).resolve().parents[3] / "shared" / "data" / "deplain-web-dev" / "documents.csv"

# Our own small German example: a weather warning in ordinary German (C2) and in simple German (A2).
GERMAN_C2 = (
    "Der Deutsche Wetterdienst warnt für das kommende Wochenende vor ergiebigen Niederschlägen, die in den Mittelgebirgen "
    "örtlich zu Überschwemmungen führen könnten. Besonders betroffen sind voraussichtlich der Harz und das Erzgebirge, wo "
    "innerhalb von zwei Tagen bis zu hundert Liter Regen pro Quadratmeter erwartet werden.\n\n"
    "Die Behörden empfehlen den Anwohnerinnen und Anwohnern, Keller und tiefer gelegene Räume rechtzeitig zu räumen und "
    "sich regelmäßig über die aktuelle Warnlage zu informieren. Erst zu Beginn der neuen Woche dürfte sich die Wetterlage "
    "nach Einschätzung der Meteorologen spürbar beruhigen.\n"
)
GERMAN_A2 = (
    "Am Wochenende regnet es sehr viel. In den Bergen kann es Hochwasser geben. Das sagt der Wetter-Dienst. Im Harz regnet "
    "es besonders viel. Auch im Erz-Gebirge regnet es viel.\n\n"
    "Räumen Sie Ihren Keller aus. Hören Sie oft Radio. Ab Montag wird das Wetter besser.\n"
)


def german_files(article: str = "Wetter", levels: tuple[str, str] = ("A2", "C2")) -> list[SimpleUploadedFile]:
    """The example as two text files; ``levels``: (the simple text's level, the complex text's level)."""
    simple, complex_ = levels
    return [
        SimpleUploadedFile(f"{article}-{simple}.txt", GERMAN_A2.encode()),
        SimpleUploadedFile(f"{article}-{complex_}.txt", GERMAN_C2.encode()),
    ]


def import_form(files: list[SimpleUploadedFile], **fields) -> dict:
    return {"corpus_name": "Wetter", "language": "de", "format": "text", "paragraph_mode": "auto",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$", "pairing": "all", "files": files, **fields}  # fmt: skip


def _import_through_the_page(client, files: list[SimpleUploadedFile], **fields) -> ImportJob:
    response = client.post(IMPORT, import_form(files, **fields))
    assert response.status_code == 302, re.sub(r"\s+", " ", response.content.decode())[:3000]
    job = ImportJob.objects.get()
    import_job_execute(job_id=job.pk)  # what the worker runs
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return job


def directions(corpus_name: str = "Wetter") -> set[tuple[str, str, str]]:
    """(article, complex level, simple level) of the corpus's pairs."""
    pairs = DocumentPair.objects.filter(corpus__name=corpus_name)
    return set(pairs.values_list("complex_document__external_id", "complex_document__level", "simple_document__level"))


def _job_page(client, job: ImportJob) -> str:
    return re.sub(r"\s+", " ", client.get(reverse("alignment:import_job", args=[job.pk])).content.decode())


def test_german_a2_and_c2_files_from_the_import_page_make_c2_the_complex_side(client, owner):
    client.force_login(owner)
    job = _import_through_the_page(client, german_files())
    assert directions() == {("Wetter", "C2", "A2")}
    assert job.direction == ["Level order, most complex first: C2, A2.", "C2 › A2: CEFR levels, a known scheme."]
    assert "Which side is complex" in _job_page(client, job) and "C2 › A2: CEFR levels, a known scheme." in _job_page(client, job)


@pytest.mark.shared_data
@pytest.mark.skipif(not DEPLAIN.exists(), reason=f"real-data test: {DEPLAIN} is absent")
def test_deplain_files_from_the_import_page_make_the_original_the_complex_side(client, owner):
    """DEplain-web's 35 C2/A2 pairs (of its 56 dev pairs), one sentence per line, as one browser upload."""
    rows = [row for row in csv.DictReader(DEPLAIN.open(encoding="utf-8")) if (row["complex_level"], row["simple_level"]) == ("c2", "a2")]
    assert len(rows) == 35
    files, expected = [], set()
    for row in rows:
        for side, level in (("original", row["complex_level"]), ("simplification", row["simple_level"])):
            text = "\n".join(sentence.strip() for sentence in row[side].split("|||") if sentence.strip())
            files.append(SimpleUploadedFile(f"deplain{row['pair_id']}-{level}.txt", text.encode()))
        expected.add((f"deplain{row['pair_id']}", row["complex_level"], row["simple_level"]))
    client.force_login(owner)
    job = _import_through_the_page(client, files, format="presplit")
    assert directions() == expected  # every original (c2) is the complex side; the old key made a2 complex
    assert job.direction == ["Level order, most complex first: c2, a2.", "c2 › a2: CEFR levels, a known scheme."]


def test_unknown_level_names_pick_the_complex_side_by_readability_and_the_report_says_so(client, owner):
    client.force_login(owner)
    job = _import_through_the_page(client, german_files(levels=("anfang", "profi")))
    assert directions() == {("Wetter", "profi", "anfang")}  # the old key put "anfang" first, alphabetically
    assert job.direction[0] == "Level order, most complex first: profi, anfang."
    assert re.fullmatch(
        r"profi › anfang: 'profi' and 'anfang' are not levels of one known scheme; 'profi' reads harder \(LIX [\d.]+: "
        r"[\d.]+ words per sentence, \d+ % long words; 'anfang': LIX [\d.]+: [\d.]+ words per sentence, \d+ % long words\), "
        r"so it is the complex side\.",
        job.direction[1],
    )
    assert "&#x27;profi&#x27; reads harder" in _job_page(client, job)
    assert Corpus.objects.get(name="Wetter").level_order == ["profi", "anfang"]  # stored: the sort key alone would not give it


def test_a_level_order_given_on_the_page_wins_over_the_scheme(client, owner):
    client.force_login(owner)
    job = _import_through_the_page(client, german_files(), level_order="A2, C2")
    assert job.options["level_order"] == ["A2", "C2"]
    assert directions() == {("Wetter", "A2", "C2")}
    assert job.direction[1] == "A2 › C2: your order."


@pytest.mark.parametrize(
    ("level_order", "message"),
    [
        ("C2, B1", "&#x27;B1&#x27; is not a level of the files (they have: A2, C2)"),
        ("c2, A2", "did you mean &#x27;C2&#x27;?"),
        ("C2, C2", "level &#x27;C2&#x27; is named twice"),
        ("C2,,A2", "level 2 is empty"),
        ("C2, " + "x" * 33, "is longer than 32 characters"),
        ("x" * 1001, "Ensure this value has at most 1000 characters"),
    ],
)
def test_a_bad_level_order_is_refused_on_its_field_and_nothing_is_stored(client, owner, level_order, message):
    client.force_login(owner)
    before = database_fingerprint()
    response = client.post(IMPORT, import_form(german_files(), level_order=level_order))
    page = re.sub(r"\s+", " ", response.content.decode())
    assert response.status_code == 200
    field = re.search(r'<div class="field has-error" id="field-level_order">.*?</div>', page)
    assert field and message in field.group(0), page[:3000]
    assert database_fingerprint() == before


def _corpus_with_a_pair(owner, complex_level: str, simple_level: str) -> Corpus:
    """A corpus with one article whose pair runs ``complex_level`` → ``simple_level`` and no stored level order,
    as the old code left German CEFR corpora (it made A2 the complex side)."""
    corpus, _ = corpus_get_or_create(name="Wetter", language="de", owner=owner)
    files = [("Sturm-A2.txt", GERMAN_A2.encode()), ("Sturm-C2.txt", GERMAN_C2.encode())]
    corpus_import_files(corpus=corpus, files=files, options=ImportOptions(language="de"))
    documents = {document.level: document for document in corpus.documents.all()}
    DocumentPair.objects.filter(corpus=corpus).update(complex_document=documents[complex_level], simple_document=documents[simple_level])
    Corpus.objects.filter(pk=corpus.pk).update(level_order=[])
    corpus.refresh_from_db()
    return corpus


def test_an_order_that_would_turn_existing_pairs_round_is_refused_before_anything_is_stored(client, owner):
    _corpus_with_a_pair(owner, "C2", "A2")
    client.force_login(owner)
    before = database_fingerprint()
    response = client.post(IMPORT, import_form(german_files(article="Regen"), level_order="A2, C2"))
    page = re.sub(r"\s+", " ", response.content.decode())
    assert "corpus &#x27;Wetter&#x27; already pairs &#x27;C2&#x27; as the complex side and &#x27;A2&#x27; as the simple one" in page
    assert "Flip direction on the corpus page" in page
    assert database_fingerprint() == before


def test_an_import_into_a_corpus_whose_pairs_run_the_other_way_keeps_their_direction(owner):
    corpus = _corpus_with_a_pair(owner, "A2", "C2")
    report = corpus_import_files(
        corpus=corpus, files=[(f.name, f.read()) for f in german_files(article="Regen")], options=ImportOptions(language="de")
    )
    assert directions() == {("Sturm", "A2", "C2"), ("Regen", "A2", "C2")}  # never silently turned round: Flip does that
    assert report.direction[1] == "A2 › C2: the corpus's existing pairs."
    corpus.refresh_from_db()
    assert corpus.level_order == ["A2", "C2"]


@pytest.mark.django_db(transaction=True)
def test_the_api_import_takes_the_level_order_and_refuses_a_bad_one_on_its_field(owner):
    from rest_framework.test import APIClient

    from webapp.accounts.services import api_token_create

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=owner).key}")
    body = {k: v for k, v in import_form(german_files(), level_order="A2, B1").items() if k != "paragraph_mode"}
    refused = client.post("/api/imports/", body, format="multipart")
    assert refused.status_code == 400 and "'B1' is not a level of the files" in refused.json()["level_order"][0]
    assert not ImportJob.objects.exists()
    accepted = client.post("/api/imports/", {**body, "files": german_files(), "level_order": "A2, C2"}, format="multipart")
    assert accepted.status_code == 202, accepted.content
    assert accepted.json()["options"]["level_order"] == ["A2", "C2"] and accepted.json()["direction"] == []


def test_the_command_checks_the_level_order_and_prints_the_direction(tmp_path, owner):
    get_user_model().objects.create_superuser("admin", password="admin-pass-123")
    for uploaded in german_files():
        (tmp_path / uploaded.name).write_bytes(uploaded.read())
    with pytest.raises(CommandError, match=r"--level-order: 'B1' is not a level of the files \(they have: A2, C2\)"):
        call_command("import_corpus", str(tmp_path), corpus="Wetter", language="de", level_order="C2,B1", no_embed=True, stdout=StringIO())
    assert not Corpus.objects.exists()
    out = StringIO()
    call_command("import_corpus", str(tmp_path), corpus="Wetter", language="de", no_embed=True, no_align=True, stdout=out)
    assert directions() == {("Wetter", "C2", "A2")}
    assert "C2 › A2: CEFR levels, a known scheme." in out.getvalue()
