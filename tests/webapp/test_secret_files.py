"""Secret files (the generated SECRET_KEY, the demo's passwords) are owner-only from their creation, even under
umask 0, and two processes creating one at once agree on a single winner."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import webapp.settings as app_settings
from webapp.demo import demo_accounts_ensure
from webapp.lib.secret_files import secret_file_create, secret_file_replace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def umask_zero():
    """The most permissive umask: a file created with a default mode would come out world-readable (0666)."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def modes_seen(tmp_path):
    """The mode of every file in tmp_path at every audited operation (open, write, chmod, link, ...) while the test
    runs: a file written first and chmod-ed afterwards is caught world-readable in between."""
    seen: dict[str, set[int]] = {}
    state = {"active": True, "inside": False}

    def hook(event: str, args: tuple) -> None:
        if not state["active"] or state["inside"]:
            return
        state["inside"] = True  # scandir is audited too
        try:
            for entry in os.scandir(tmp_path):
                seen.setdefault(entry.name, set()).add(stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode))
        except OSError:
            pass
        finally:
            state["inside"] = False

    sys.addaudithook(hook)  # hooks cannot be removed: this one goes quiet after the test
    yield seen
    state["active"] = False


def test_the_mode_watch_catches_write_then_chmod(tmp_path, umask_zero, modes_seen):
    """The old way, to show the watch below would catch it."""
    path = tmp_path / "secret"
    path.write_text("key")
    path.chmod(0o600)
    assert 0o666 in modes_seen["secret"]


def test_a_created_secret_file_is_0600_under_umask_zero_and_nothing_else_is_left(tmp_path, umask_zero):
    path = tmp_path / "secret"
    assert secret_file_create(path, "first") == "first"
    assert mode(path) == 0o600
    assert secret_file_create(path, "second") == "first"  # never overwritten
    secret_file_replace(path, "third")
    assert path.read_text() == "third" and mode(path) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no temporary file left behind


def test_a_replaced_world_readable_file_comes_back_0600(tmp_path, umask_zero):
    path = tmp_path / "secret"
    path.write_text("old")
    path.chmod(0o644)  # as the old code could leave it
    secret_file_replace(path, "new")
    assert mode(path) == 0o600 and path.read_text() == "new"


def test_processes_racing_to_create_the_file_all_read_the_winners_content(tmp_path):
    path = tmp_path / "secret_key"
    script = (
        "import sys, time; from pathlib import Path; from webapp.lib.secret_files import secret_file_create\n"
        "start = float(sys.argv[2])\n"
        "while time.time() < start: pass\n"
        "print(secret_file_create(Path(sys.argv[1]), sys.argv[3]))"
    )
    start = str(time.time() + 1.5)  # all start together, after the interpreters are up
    children = [
        subprocess.Popen([sys.executable, "-c", script, str(path), start, f"key-{n}"], cwd=REPO, stdout=subprocess.PIPE, text=True)
        for n in range(6)
    ]
    answers = {child.communicate(timeout=60)[0].strip() for child in children}
    assert all(child.returncode == 0 for child in children)
    assert answers == {path.read_text()} and path.read_text().startswith("key-")
    assert mode(path) == 0o600


def test_the_generated_secret_key_file_is_never_world_readable_under_umask_zero(tmp_path, monkeypatch, umask_zero, modes_seen):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setattr(app_settings, "STATE_DIR", tmp_path)
    key = app_settings._secret_key()
    assert len(key) > 50 and (tmp_path / "secret_key").read_text() == key
    assert mode(tmp_path / "secret_key") == 0o600
    assert app_settings._secret_key() == key  # the same key on the next start
    assert modes_seen and all(modes == {0o600} for modes in modes_seen.values()), modes_seen


@pytest.mark.django_db
def test_the_demo_credentials_file_is_never_world_readable_also_after_an_update(tmp_path, monkeypatch, umask_zero, settings, modes_seen):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.delenv("DEMO_MANAGER_PASSWORD", raising=False)
    monkeypatch.delenv("DEMO_ANNOTATOR_PASSWORD", raising=False)
    store = tmp_path / "demo-credentials.json"
    first = {c.username: c.password for c in demo_accounts_ensure(tmp_path)}
    assert mode(store) == 0o600 and json.loads(store.read_text()) == first

    monkeypatch.setenv("DEMO_ANNOTATOR_PASSWORD", "a-new-long-passphrase")
    second = {c.username: c.password for c in demo_accounts_ensure(tmp_path)}
    assert second == {"manager": first["manager"], "annotator": "a-new-long-passphrase"}
    assert mode(store) == 0o600 and json.loads(store.read_text()) == second
    assert [p.name for p in tmp_path.iterdir()] == ["demo-credentials.json"]
    assert modes_seen and all(modes == {0o600} for modes in modes_seen.values()), modes_seen
