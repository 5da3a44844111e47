"""The world the access matrix runs in: one owner's objects of every kind, and the personas who ask for them.

Built once per module (see ``test_access_matrix.py``) with the services the other tests
use, inside a transaction that is rolled back at the end. Two corpora: a private one,
whose objects fill the path parameters for most personas, and a shared one, whose
objects the ``reader`` persona (a user with no role anywhere) asks for.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection

from alignment import services as alignment_services
from alignment.aligning import service as aligning
from alignment.aligning.measures import run_measure
from alignment.importing.models import ImportJob
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.mining.models import MiningJob
from alignment.models import CandidateAlignment, DocumentPair
from annotation import services as annotation_services
from annotation.export.models import ExportJob
from annotation.models import LabelEvent
from annotation.training.models import ModelVersion, TrainingJob, TrainingSnapshot
from tests.conftest import SAMPLE_ADV, SAMPLE_ELE
from webapp.accounts.services import api_token_create
from webapp.webhooks import services as webhook_services

PERSONAS = ["anonymous", "outsider", "reader", "viewer", "annotator", "owner", "staff"]
EXPORT_FILE = "README.md"


@dataclass
class World:
    users: dict[str, object]
    private: dict[str, object] = field(default_factory=dict)  # object kind -> the owner's private object of that kind
    shared: dict[str, object] = field(default_factory=dict)  # the same kinds, in the owner's shared corpus

    def objects_for(self, persona: str) -> dict[str, object]:
        """The reader asks for the shared corpus's objects (and the private project's); everyone else for the private ones."""
        return {**self.private, **self.shared} if persona == "reader" else self.private


def _corpus_objects(owner, name: str, *, shared: bool) -> dict[str, object]:
    corpus, _ = alignment_services.corpus_get_or_create(name=name, language="en", owner=owner, is_shared=shared)
    files = [(f"{name}-adv.txt", SAMPLE_ADV.encode()), (f"{name}-ele.txt", SAMPLE_ELE.encode())]
    report = corpus_import_files(corpus=corpus, files=files, options=ImportOptions(format="text"))
    assert not report.errors, report.errors
    pair = DocumentPair.objects.get(corpus=corpus)
    run = aligning.alignment_run_create(
        corpus=corpus, aligner_config={"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "newsela"},
        measures=["tfidf_cosine"], created_by=owner,
    )  # fmt: skip
    run = aligning.alignment_run_execute(run_id=run.pk, build_measure=run_measure)  # in-process: no worker, nothing queued runs
    mining_job = MiningJob.objects.create(
        source_corpus=corpus, target_corpus=corpus, method="muss", config={}, config_hash=f"matrix-{name}", created_by=owner
    )
    return {
        "corpus": corpus,
        "document": pair.complex_document,
        "pair": pair,
        "alignment_run": run,
        "candidate": CandidateAlignment.objects.filter(run=run).first(),
        "embedding_run": alignment_services.embedding_run_create(corpus=corpus, encoder_name="access-matrix-encoder", created_by=owner),
        "mining_job": mining_job,
    }


def world_build() -> World:
    users = get_user_model().objects
    world = World(users={
        "outsider": users.create_user("matrix-outsider", password="p-123456789"),
        "viewer": users.create_user("matrix-viewer", password="p-123456789"),
        "annotator": users.create_user("matrix-annotator", password="p-123456789"),
        "owner": users.create_user("matrix-owner", password="p-123456789"),
        "staff": users.create_user("matrix-staff", password="p-123456789", is_staff=True),
    })  # fmt: skip
    world.users["reader"] = world.users["outsider"]
    owner = world.users["owner"]
    world.private = _corpus_objects(owner, "Matrix private", shared=False)
    world.shared = _corpus_objects(owner, "Matrix shared", shared=True)

    project = annotation_services.project_create(
        name="Matrix project", corpus=world.private["corpus"], created_by=owner, overlap=1, suggestion_run=world.private["alignment_run"]
    )  # the creator is its manager
    annotation_services.membership_set(project=project, user=world.users["viewer"], role="viewer")
    annotation_services.membership_set(project=project, user=world.users["annotator"], role="annotator")
    annotation_services.assignments_distribute(project=project)
    pair = world.private["pair"]
    assignment = project.assignments.get(annotator=world.users["annotator"], pair=pair)
    simple = pair.simple_document.sentences.order_by("index").first()
    complex_ = pair.complex_document.sentences.order_by("index").first()
    annotation_services.label_record(
        project=project, annotator=world.users["annotator"], pair=pair, simple_sentence_id=simple.pk,
        complex_sentence_id=complex_.pk, label="aligned", expected_previous=None,
    )  # fmt: skip
    snapshot = TrainingSnapshot.objects.create(project=project, splits={}, items=[], label_event_ids=[], counts={}, created_by=owner)
    training_job = TrainingJob.objects.create(project=project, snapshot=snapshot, config={}, created_by=owner)
    model_version = ModelVersion.objects.create(
        project=project, number=1, snapshot=snapshot, config={}, path="matrix-v1", checksum="0" * 64, created_by=owner,
        metrics={split: {"group": {"task1": {"precision": 0.5, "recall": 0.5, "f1": 0.5}}} for split in ("dev", "test")},
    )  # fmt: skip
    export_job = ExportJob.objects.create(
        project=project, options={}, status=ExportJob.Status.SUCCEEDED, created_by=owner,
        files=[{"name": name, "bytes": 6, "sha256": hashlib.sha256(b"export").hexdigest()} for name in (EXPORT_FILE, "export.zip")],
    )  # fmt: skip
    export_job.directory.mkdir(parents=True, exist_ok=True)
    for name in (EXPORT_FILE, "export.zip"):
        (export_job.directory / name).write_bytes(b"export")
    webhook = webhook_services.webhook_create(
        project=project, url="https://receiver.example/hook", events=["label.created"], created_by=owner
    )
    world.private.update({
        "project": project, "assignment": assignment, "label_event": LabelEvent.objects.get(project=project),
        "item_event": annotation_services.item_event_record(
            project=project, annotator=world.users["annotator"], pair=pair, kind="flag"
        ),  # the annotator's own, so annotators, viewers and managers all may read it
        "training_job": training_job, "model_version": model_version, "export_job": export_job,
        "webhook": webhook, "delivery": webhook_services.webhook_ping(webhook=webhook, by=owner),
        "api_token": api_token_create(user=owner, name="matrix").token,
        "import_job": ImportJob.objects.create(created_by=owner, corpus_name="Matrix import", language="en", pairing="all", options={}),
    })  # fmt: skip
    return world


def _app_tables() -> list[str]:
    """The project's own tables, the job queue and the users (sessions are left out: logging in writes one)."""
    own = ("alignment", "annotation", "webapp", "procrastinate")
    models = [m for m in apps.get_models() if not m._meta.proxy and (m.__module__.startswith(own) or m._meta.db_table == "auth_user")]
    existing = set(connection.introspection.table_names())
    return sorted({m._meta.db_table for m in models} & existing)


def database_fingerprint() -> str:
    """One digest of every row of the app's tables (and the job queue, tokens, users): any write changes it."""
    parts = [f"(SELECT count(*) || ':' || coalesce(sum(hashtextextended(t::text, 0)), 0) FROM {table} t)" for table in _app_tables()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + " || ',' || ".join(parts))  # table names from the app registry
        return cursor.fetchone()[0]
