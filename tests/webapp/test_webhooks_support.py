"""Shared pieces of the webhook tests (no tests here): a real HTTP receiver on 127.0.0.1 and a labelled project.

The receiver is a ``http.server`` in a thread on a free port; it records every request
(headers and raw body) and answers with the scripted status codes in turn (the last
one repeats), so retries meet real sockets, real status codes and real timeouts.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth import get_user_model

from alignment.models import DocumentPair, Sentence
from annotation import services
from annotation.models import AnnotationProject


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    statuses: list[int]
    delay: float = 0.0
    requests: list[Received] = field(default_factory=list)


def receiver_start(statuses: list[int], *, delay: float = 0.0) -> tuple[Receiver, ThreadingHTTPServer]:
    receiver = Receiver(url="", statuses=list(statuses), delay=delay)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.requests.append(Received(self.path, dict(self.headers.items()), body))
            if receiver.delay:
                time.sleep(receiver.delay)
            status = receiver.statuses[min(len(receiver.requests), len(receiver.statuses)) - 1]
            answer = f"answer {len(receiver.requests)}: {status}".encode()
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args) -> None:  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server


@pytest.fixture(autouse=True)
def local_receivers_allowed(settings):
    """The receivers here listen on 127.0.0.1, which webhooks refuse unless an operator allows it
    (webapp/webhooks/outbound.py); these tests are that operator. tests/webapp/test_webhook_ssrf.py
    checks the refusal itself."""
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture
def receiver_factory():
    servers = []

    def start(*statuses: int, delay: float = 0.0) -> Receiver:
        receiver, server = receiver_start(list(statuses) or [200], delay=delay)
        servers.append(server)
        return receiver

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was free a moment ago): connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


@dataclass
class LabelledProject:
    """The tram pair in a project managed by ``owner``, with annotator anna assigned and viewer vic."""

    project: AnnotationProject
    manager: object
    anna: object
    vic: object
    pair: DocumentPair
    simple: list[Sentence]
    complex_: list[Sentence]

    def label(self, simple_index: int, complex_index: int, value: str, expected_previous: int | None = None):
        return services.label_record(
            project=self.project, annotator=self.anna, pair=self.pair, simple_sentence_id=self.simple[simple_index].pk,
            complex_sentence_id=self.complex_[complex_index].pk, label=value, expected_previous=expected_previous,
        )  # fmt: skip


@pytest.fixture
def labelled_project(tram_corpus, owner) -> LabelledProject:
    users = get_user_model().objects
    anna, vic = users.create_user("anna", password="a-pass-123"), users.create_user("vic", password="v-pass-123")
    project = services.project_create(name="Hooked", corpus=tram_corpus, created_by=owner, overlap=1)
    services.membership_set(project=project, user=anna, role="annotator")
    services.membership_set(project=project, user=vic, role="viewer")
    services.assignments_distribute(project=project)
    pair = DocumentPair.objects.get(corpus=tram_corpus)
    simple = list(pair.simple_document.sentences.order_by("index"))
    complex_ = list(pair.complex_document.sentences.order_by("index"))
    return LabelledProject(project, owner, anna, vic, pair, simple, complex_)
