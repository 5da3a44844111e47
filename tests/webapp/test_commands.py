"""Management commands: import_corpus and the idempotent demo set-up."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from alignment.models import Corpus, Document, DocumentPair, EmbeddingRun
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from webapp.demo import DEMO_CORPUS_NAME


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "Tram-adv.txt").write_text(SAMPLE_ADV, encoding="utf-8-sig")
    (tmp_path / "Tram-ele.txt").write_text(SAMPLE_ELE)
    (tmp_path / "Empty-adv.txt").write_text("\n\n  \n")
    (tmp_path / "notes.md").write_text("not a text-format file, ignored")
    return tmp_path


def test_import_corpus_stores_good_files_and_fails_naming_the_bad_one(folder, owner):
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="1 of 3 files were not imported"):
        call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", stdout=out, stderr=err)
    corpus = Corpus.objects.get(name="Cmd")
    assert corpus.owner == owner
    assert sorted(Document.objects.filter(corpus=corpus).values_list("level", flat=True)) == ["adv", "ele"]
    assert DocumentPair.objects.filter(corpus=corpus).count() == 1
    assert "2 documents created" in out.getvalue()
    assert EmbeddingRun.objects.filter(corpus=corpus).count() == 1
    alignment = corpus.alignment_runs.get()  # the new pair is queued for alignment too
    assert list(alignment.pairs.all()) == list(DocumentPair.objects.filter(corpus=corpus))
    assert f"alignment run #{alignment.pk}" in out.getvalue()


def test_import_corpus_queues_alignment_only_for_pairs_not_yet_covered(folder, owner):
    (folder / "Empty-adv.txt").unlink()
    call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", stdout=StringIO())
    (folder / "Bus-adv.txt").write_text("The city bought forty electric buses this year.\n", encoding="utf-8")
    (folder / "Bus-ele.txt").write_text("The city bought new electric buses.\n", encoding="utf-8")
    call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", stdout=StringIO())
    runs = list(Corpus.objects.get(name="Cmd").alignment_runs.order_by("pk"))
    assert [sorted(p.complex_document.external_id for p in run.pairs.all()) for run in runs] == [["Tram"], ["Bus"]]


def test_import_corpus_no_align_queues_no_alignment(folder, owner):
    (folder / "Empty-adv.txt").unlink()
    call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", no_align=True, stdout=StringIO())
    assert not Corpus.objects.get(name="Cmd").alignment_runs.exists()


def test_import_corpus_twice_changes_nothing(folder, owner):
    (folder / "Empty-adv.txt").unlink()
    call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", stdout=StringIO())
    out = StringIO()
    call_command("import_corpus", str(folder), corpus="Cmd", owner="owner", stdout=out)
    assert "0 documents created, 2 unchanged" in out.getvalue()
    assert Document.objects.count() == 2
    assert EmbeddingRun.objects.count() == 1, "nothing new: no second embedding run"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"filename_pattern": "(unclosed"}, "not a valid regular expression"),
        ({"language": "english"}, "not an ISO 639 code"),
        ({"owner": "nobody"}, "no user called 'nobody'"),
        ({"format": "csv"}, "no csv files found"),
    ],
)
def test_import_corpus_rejects_bad_arguments_clearly(folder, owner, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("import_corpus", str(folder), corpus="Cmd", **{"owner": "owner", **arguments}, stdout=StringIO())
    assert not Document.objects.exists()


def test_import_corpus_of_a_missing_path_says_so(owner, tmp_path):
    with pytest.raises(CommandError, match="no such file or folder"):
        call_command("import_corpus", str(tmp_path / "nope"), corpus="Cmd", owner="owner", stdout=StringIO())


def test_setup_demo_is_idempotent_and_prints_working_credentials(db, settings, tmp_path, monkeypatch):
    settings.STATE_DIR = tmp_path
    monkeypatch.setenv("DEMO_ANNOTATOR_PASSWORD", "annotator-from-env")
    first, second = StringIO(), StringIO()
    call_command("setup_demo", stdout=first)
    call_command("setup_demo", stdout=second)

    corpus = Corpus.objects.get(name=DEMO_CORPUS_NAME)
    assert Document.objects.filter(corpus=corpus).count() == 12
    assert DocumentPair.objects.filter(corpus=corpus).count() == 6
    assert corpus.is_shared
    assert corpus.metadata["licence"] == "CC0-1.0"  # the export's dataset card reads licence and source from here
    run = corpus.alignment_runs.get()  # queued once, not again on the second set-up
    assert run.pairs_total == 6 and run.primary_measure == "learned"  # the shipped default model
    assert run.config["model_dir"] == settings.ALIGNER_MODEL_DIR
    project = corpus.annotation_projects.get()
    assert project.suggestion_run == run and project.assignments.filter(annotator__username="annotator").count() == 6
    users = get_user_model().objects
    assert users.count() == 2
    manager_password = re.search(r"username: manager\s+password: (\S+)", first.getvalue()).group(1)
    assert f"password: {manager_password}" in second.getvalue(), "the same generated password is printed again"
    assert users.get(username="manager").check_password(manager_password)
    assert users.get(username="manager").is_superuser
    assert users.get(username="annotator").check_password("annotator-from-env")
    assert not users.get(username="annotator").is_staff
    assert "12 already there" in second.getvalue()


def test_every_response_carries_its_server_time(client, db):
    response = client.get("/accounts/login/")
    name, duration = response["Server-Timing"].split(";dur=")
    assert name == "app" and float(duration) > 0
