"""The demo: two accounts and the project's own small corpus, set up idempotently.

Passwords come from ``DEMO_MANAGER_PASSWORD`` / ``DEMO_ANNOTATOR_PASSWORD``
(checked by the password validators, like any password a user sets); otherwise
they are generated once and kept in the state directory (never in the
repository, in a file only its owner can read), so every start prints the same
working credentials.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from alignment import selectors, services
from alignment.aligning.service import alignment_run_create
from alignment.importing.readers import ImportOptions
from alignment.importing.service import ImportReport, import_paths
from alignment.importing.workflow import CorpusTarget, corpus_import_and_queue
from alignment.models import Corpus
from models_ml.data.io import AlignmentGroup
from webapp.lib.secret_files import secret_file_create, secret_file_replace

DEMO_CORPUS_DIR = Path(settings.BASE_DIR) / "alignment" / "demo_corpus"
DEMO_CORPUS_NAME = "Demo: six short news stories"
DEMO_ACCOUNTS = (("manager", "DEMO_MANAGER_PASSWORD", True), ("annotator", "DEMO_ANNOTATOR_PASSWORD", False))


@dataclass(frozen=True)
class Credential:
    username: str
    password: str
    role: str


def _stored_passwords(path: Path) -> dict[str, str]:
    return json.loads(path.read_text()) if path.exists() else {}


def _passwords_wanted(stored: dict[str, str]) -> dict[str, str]:
    return {
        username: os.environ.get(env_name) or stored.get(username) or secrets.token_urlsafe(12) for username, env_name, _ in DEMO_ACCOUNTS
    }


def demo_passwords_store(state_dir: Path) -> dict[str, str]:
    """The demo accounts' passwords, kept in ``demo-credentials.json`` (mode 0600 from its creation).

    Passwords from the environment win over stored ones, stored ones over new ones. When two
    processes set the demo up at once, the first to create the file wins and the other takes
    its passwords, so both print (and set) the same credentials.
    """
    store = state_dir / "demo-credentials.json"
    stored = _stored_passwords(store)
    wanted = _passwords_wanted(stored)
    if not store.exists():
        stored = json.loads(secret_file_create(store, json.dumps(wanted, indent=2)))
        wanted = _passwords_wanted(stored)  # the winner's, when another process created the file first
    if wanted != stored:
        secret_file_replace(store, json.dumps(wanted, indent=2))
    return wanted


@transaction.atomic
def demo_accounts_ensure(state_dir: Path) -> list[Credential]:
    """Create or update the manager (superuser) and annotator accounts; return their credentials.

    A password that the validators refuse (too short, common, numeric, like the username) stops
    the setup with a ValueError naming the variable and the reasons.
    """
    users = get_user_model().objects
    for username, env_name, _ in DEMO_ACCOUNTS:  # before anything is stored or set
        if os.environ.get(env_name):
            try:
                user = users.filter(username=username).first() or users.model(username=username)
                validate_password(os.environ[env_name], user)
            except ValidationError as error:
                raise ValueError(f"{env_name} is refused: {' '.join(error.messages)}") from None
    passwords = demo_passwords_store(state_dir)
    credentials = []
    for username, _, is_manager in DEMO_ACCOUNTS:
        password = passwords[username]
        user, _ = users.get_or_create(username=username)
        user.is_staff = user.is_superuser = is_manager
        if not user.check_password(password):
            user.set_password(password)
        user.save()
        credentials.append(Credential(username, password, "manager (admin)" if is_manager else "annotator"))
    return credentials


def demo_corpus_import(*, owner) -> tuple[Corpus, ImportReport]:
    """Import the demo corpus (a no-op when it is already there) and queue embedding of what is missing.

    The demo is set up again on every start, so instead of queueing for what this import
    created (the workflow's rule) it makes sure the corpus is embedded and aligned once: a
    start after an interrupted set-up queues what is still missing.
    """
    options = ImportOptions(format="text", language="en")
    target = CorpusTarget(
        name=DEMO_CORPUS_NAME,
        language="en",
        owner=owner,
        description="Six invented news stories, each in an advanced and an elementary version, written for this project (CC0). "
        "The simple versions split, merge, delete and paraphrase sentences.",
        is_shared=True,
        level_order=["adv", "ele"],
        metadata={"licence": "CC0-1.0", "source": "written for this project (alignment/demo_corpus/)"},
    )
    paths = import_paths(DEMO_CORPUS_DIR, options)
    outcome = corpus_import_and_queue(
        target=target, files=((p.name, p.read_bytes()) for p in paths), options=options, embed=False, align=False
    )
    report, corpus = outcome.report, outcome.corpus
    if report.errors or corpus is None:
        raise RuntimeError("the demo corpus did not import: " + "; ".join(f.error or "" for f in report.errors))
    if selectors.corpus_needs_embedding(corpus, settings.ENCODER_MODEL):
        services.embedding_run_create(corpus=corpus, encoder_name=settings.ENCODER_MODEL)
    if not corpus.alignment_runs.exists():
        # Queued after the embedding job; a second worker waits for it (alignment/aligning/embedding_wait.py), so the
        # demo aligns with the stored vectors.
        alignment_run_create(corpus=corpus, aligner_config={"encoder": settings.ENCODER_MODEL}, model_dir=settings.ALIGNER_MODEL_DIR)
    return corpus, report


REFERENCE_HEADING = re.compile(r"^## (\w+) \(C: (\d+) sentences, S: (\d+) sentences\)")
REFERENCE_LINK = re.compile(r"^- (C\d+(?: \+ C\d+)*) → (S\d+(?:, S\d+)*):")


def demo_reference_groups() -> dict[str, tuple[int, int, list[AlignmentGroup]]]:
    """The demo corpus's hand-written reference (``ALIGNMENTS.md``): article -> (complex count, simple count, gold
    groups with 0-based sentence indices, all aligned)."""
    articles: dict[str, tuple[int, int, list[AlignmentGroup]]] = {}
    current = None
    for line in (DEMO_CORPUS_DIR / "ALIGNMENTS.md").read_text(encoding="utf-8").splitlines():
        if heading := REFERENCE_HEADING.match(line):
            current = heading.group(1)
            articles[current] = (int(heading.group(2)), int(heading.group(3)), [])
        elif (link := REFERENCE_LINK.match(line)) and current:
            complex_ids = [int(c[1:]) - 1 for c in link.group(1).split(" + ")]
            simple_ids = [int(s[1:]) - 1 for s in link.group(2).split(", ")]
            articles[current][2].append(AlignmentGroup(complex=tuple(complex_ids), simple=tuple(simple_ids), label="aligned"))
    return articles


DEMO_PROJECT_NAME = "Demo: label the six stories"


def demo_project_ensure(*, corpus: Corpus, manager, annotator):
    """A demo annotation project over the demo corpus with the annotator assigned every pair (idempotent).

    Its suggestions come from the demo's alignment run; the candidates appear once the
    worker has run it.
    """
    from annotation import services as annotation_services
    from annotation.models import AnnotationProject

    project = AnnotationProject.objects.filter(name=DEMO_PROJECT_NAME).first()
    if project is None:
        project = annotation_services.project_create(
            name=DEMO_PROJECT_NAME,
            corpus=corpus,
            created_by=manager,
            overlap=1,
            suggestion_run=corpus.alignment_runs.order_by("pk").first(),
            guidelines="Aligned: the simple sentence says the same as the complex one (it may be shorter or simpler).\n"
            "Partially aligned: they share some content, but each says something the other does not.\n"
            "Not aligned: no shared content. A simple sentence may align to several complex sentences (a merge), "
            "and several simple sentences to one complex sentence (a split).",
        )
    annotation_services.membership_set(project=project, user=annotator, role="annotator")
    annotation_services.assignments_distribute(project=project)
    return project
