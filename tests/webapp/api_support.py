"""Fixtures and helpers shared by the API tests (tests/webapp/test_api_*.py).

``api_world`` is one small world with every permission persona: the corpus owner (who
created the project, so its manager), two annotators assigned the tram pair, a viewer,
an outsider with no role and no corpus, and a staff user. A lexical alignment run (no
encoder) ran in-process, so there are candidates and suggestions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.models import AlignmentRun, Corpus, DocumentPair, Sentence
from annotation import services
from annotation.models import AnnotationProject
from webapp.accounts.services import api_token_create

LEXICAL_RUN = {"aligner_config": {"measure": "tfidf_cosine", "paragraph_variant": "none"}, "measures": ["tfidf_cosine", "jaccard"]}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Seven personas with the default PBKDF2 cost take seconds per test; the hash strength is not under test here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class ApiWorld:
    corpus: Corpus
    pair: DocumentPair
    run: AlignmentRun
    project: AnnotationProject
    simple: list[Sentence]
    complex_: list[Sentence]
    users: dict[str, object] = field(default_factory=dict)  # persona name -> user

    def client(self, persona: str | None) -> APIClient:
        """An API client authenticated with the persona's token (None: anonymous)."""
        client = APIClient()
        if persona is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=self.users[persona]).key}")
        return client

    def url(self, path: str) -> str:
        return f"/api/{path.format(project=self.project.pk, pair=self.pair.pk, run=self.run.pk, corpus=self.corpus.pk)}"


def finished_lexical_run(corpus: Corpus) -> AlignmentRun:
    """A run over the corpus with lexical measures only, executed in this process (no worker, no encoder)."""
    run = alignment_run_create(corpus=corpus, **LEXICAL_RUN)
    return alignment_run_execute(run_id=run.pk, build_measure=run_measure)


@pytest.fixture
def api_world(tram_corpus, owner, outsider, staff) -> ApiWorld:
    users = get_user_model().objects
    anna, ben = users.create_user("anna", password="a-pass-123"), users.create_user("ben", password="b-pass-123")
    vera = users.create_user("vera", password="v-pass-123")
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    run = finished_lexical_run(tram_corpus)
    assert run.status == "succeeded" and run.candidates_written > 0
    project = services.project_create(name="Trams project", corpus=tram_corpus, created_by=owner, suggestion_run=run, overlap=2)
    for user, role in ((anna, "annotator"), (ben, "annotator"), (vera, "viewer")):
        services.membership_set(project=project, user=user, role=role)
    services.assignments_distribute(project=project)
    return ApiWorld(
        corpus=tram_corpus, pair=pair, run=run, project=project,
        simple=list(pair.simple_document.sentences.order_by("index")),
        complex_=list(pair.complex_document.sentences.order_by("index")),
        users={"owner": owner, "manager": owner, "anna": anna, "ben": ben, "viewer": vera, "outsider": outsider, "staff": staff},
    )  # fmt: skip


def results(response) -> list[dict]:
    """The rows of a paginated list response (asserting it is one)."""
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) >= {"count", "next", "previous", "results"}, body
    return body["results"]
