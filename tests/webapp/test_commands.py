"""Management commands: import_corpus, the idempotent demo set-up, and runapp serving with gunicorn."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from io import StringIO
from pathlib import Path

import psutil
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from alignment.models import Corpus, Document, DocumentPair, EmbeddingRun
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from tests.markers import process_level
from webapp.demo import DEMO_CORPUS_NAME

REPO_ROOT = Path(__file__).resolve().parents[2]


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, **headers: str):
    for _ in range(300):  # the embedded database, migrations and collectstatic come first
        try:
            # gunicorn listens before its workers have loaded Django: the first answer can take a while.
            return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=90)
        except (ConnectionError, urllib.error.URLError):
            time.sleep(0.5)
    raise AssertionError(f"nothing answered at {url}")


@process_level
def test_runapp_serves_with_gunicorn_hashed_compressed_static_and_stops_the_database_cleanly(tmp_path):
    """The production path of scripts/run.sh: its own embedded database, gunicorn workers attached to it."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EMBEDDED_DB_DELETE_ON_EXIT", "DEBUG", "DEV_SERVER"}}
    env.update(STATE_DIR=str(tmp_path), WEB_CONCURRENCY="2", STATIC_MANIFEST="1")
    runapp = subprocess.Popen(
        [sys.executable, "manage.py", "runapp", "--no-demo", f"127.0.0.1:{port}"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        login = _get(f"http://127.0.0.1:{port}/accounts/login/")
        assert login.headers["Server"].startswith("gunicorn")
        css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', login.read().decode())
        assert css, "the stylesheet is linked by its hashed name"
        served = _get(f"http://127.0.0.1:{port}{css.group(1)}", **{"Accept-Encoding": "gzip"})
        assert served.headers["Content-Encoding"] == "gzip"
        assert "max-age=315360000" in served.headers["Cache-Control"]  # hashed: cached "forever"
    finally:
        runapp.send_signal(signal.SIGINT)
        output, _ = runapp.communicate(timeout=60)
    assert runapp.returncode == 0, output
    assert "gunicorn (2 workers)" in output
    pgdata = tmp_path / "postgres"
    deadline = time.monotonic() + 30
    while (pgdata / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not (pgdata / "postmaster.pid").exists(), "the last process to exit stops the embedded database cleanly"
    assert not [p for p in psutil.process_iter(attrs=["cmdline"]) if str(pgdata) in " ".join(p.info["cmdline"] or [])]
