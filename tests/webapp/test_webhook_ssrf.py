"""Webhooks cannot reach the server's own network: refused when saved and again before every send,
connected to the address that was checked, allowed only through the operators' allow-list; the log
keeps status codes and timings, never the receiver's reply."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from webapp.webhooks import outbound, services
from webapp.webhooks.delivery import webhook_delivery_attempt
from webapp.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery

pytest_plugins = ["tests.webapp.test_webhooks_support"]  # the HTTP receiver and the labelled project
pytestmark = pytest.mark.django_db

BLOCKED_URLS = {
    "http://127.0.0.1:8000/": "127.0.0.1 is a loopback address",
    "http://10.1.2.3/hook": "10.1.2.3 is a private address",
    "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is a link-local address",
    "http://[::1]:5432/": "::1 is a loopback address",
    "http://localhost:8000/hook": "localhost resolves to",  # to 127.0.0.1 or ::1, by the machine's resolver
    "http://0.0.0.0/": "0.0.0.0 is an unspecified address",
    "http://[::ffff:127.0.0.1]/": "a loopback address (embedded in ::ffff:7f00:1)",
    "http://100.64.0.7/": "100.64.0.7 is a non-public (special-purpose) address",
}


@pytest.fixture(autouse=True)
def no_allow_list(settings):
    """Undo the support module's allowance for 127.0.0.1: here the defaults are under test."""
    settings.WEBHOOK_ALLOWED_HOSTS = []
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False


class Resolver:
    """Plays DNS for our resolver seam (webapp.webhooks.outbound.resolve): names to fixed addresses, counting lookups."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers, self.lookups = answers, []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.answers:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        return self.answers[host]


@pytest.mark.parametrize(("url", "reason"), BLOCKED_URLS.items())
def test_saving_a_webhook_to_a_non_public_address_is_refused_with_the_reason(labelled_project, url, reason):
    with pytest.raises(ValidationError) as refused:
        services.webhook_create(project=labelled_project.project, url=url, events=["label.created"], created_by=None)
    (message,) = refused.value.message_dict["url"]
    assert message.startswith("Refused: ") and reason in message and "WEBHOOK_ALLOWED_HOSTS" in message
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/", "http://169.254.169.254/latest/meta-data/", "http://localhost/"])
def test_the_webhooks_page_refuses_a_private_url_and_says_why(client, labelled_project, url):
    client.force_login(labelled_project.manager)
    response = client.post(
        reverse("webhooks:webhook_create", args=[labelled_project.project.pk]), {"url": url, "events": ["label.created"]}
    )
    assert response.status_code == 200
    assert "Refused: " in response.content.decode() and "webhooks may only reach public addresses" in response.content.decode()
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "text", ["224.0.0.1", "ff02::1", "fc00::1", "fe80::1", "::", "240.0.0.1", "2002:7f00:1::", "64:ff9b::a00:1", "198.18.0.1"]
)
def test_multicast_reserved_and_embedded_private_addresses_are_not_public(text):
    assert outbound.address_problem(ipaddress.ip_address(text)) != ""


@pytest.mark.parametrize("text", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(text):
    assert outbound.address_problem(ipaddress.ip_address(text)) == ""


def test_a_public_host_is_saved(labelled_project, monkeypatch):
    monkeypatch.setattr(outbound, "resolve", Resolver({"hooks.example.com": ["93.184.216.34"]}))
    webhook = services.webhook_create(
        project=labelled_project.project, url="https://hooks.example.com/in", events=["label.created"], created_by=None
    )
    assert webhook.pk is not None


def test_a_name_resolving_to_one_private_address_among_public_ones_is_refused(labelled_project, monkeypatch):
    monkeypatch.setattr(outbound, "resolve", Resolver({"mixed.example.com": ["93.184.216.34", "10.0.0.8"]}))
    with pytest.raises(ValidationError, match="mixed.example.com resolves to 10.0.0.8, which is a private address"):
        services.webhook_create(
            project=labelled_project.project, url="http://mixed.example.com/", events=["label.created"], created_by=None
        )


def test_the_send_time_check_refuses_a_name_that_now_resolves_to_a_private_address(labelled_project, receiver_factory, monkeypatch):
    """Saved while the name resolved publicly (or not at all); by send time DNS points it at the server's own loopback,
    where a receiver really listens: nothing reaches it, and the attempt says why."""
    receiver = receiver_factory(200)
    port = receiver.url.split(":")[2].split("/")[0]
    dns = Resolver({"rebind.example.com": ["93.184.216.34"]})
    monkeypatch.setattr(outbound, "resolve", dns)
    webhook = services.webhook_create(
        project=labelled_project.project, url=f"http://rebind.example.com:{port}/hook", events=["label.created"], created_by=None
    )
    dns.answers["rebind.example.com"] = ["127.0.0.1"]
    delivery = services.webhook_ping(webhook=webhook, by=None)

    outcome = webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=0)

    assert receiver.requests == []
    (attempt,) = WebhookAttempt.objects.filter(delivery=delivery)
    assert attempt.status_code is None
    assert attempt.error == (
        "blocked: rebind.example.com resolves to 127.0.0.1, which is a loopback address: webhooks may only reach public "
        "addresses (an operator can allow a private receiver with WEBHOOK_ALLOWED_HOSTS)."
    )
    assert outcome.delivery.status == "pending" and outcome.delivery.last_error == attempt.error


def test_the_connection_goes_to_the_checked_address_with_the_original_host_header(
    labelled_project, receiver_factory, monkeypatch, settings
):
    """One lookup per send, and the socket opens to that answer: the name is never resolved a second time
    (which DNS rebinding would need). The request still names the URL's host."""
    settings.WEBHOOK_ALLOWED_HOSTS = ["internal.example.com"]
    receiver = receiver_factory(204)
    port = receiver.url.split(":")[2].split("/")[0]
    dns = Resolver({"internal.example.com": ["127.0.0.1"]})
    monkeypatch.setattr(outbound, "resolve", dns)
    webhook = services.webhook_create(
        project=labelled_project.project, url=f"http://internal.example.com:{port}/hook?x=1", events=["label.created"], created_by=None
    )
    dns.lookups.clear()
    delivery = services.webhook_ping(webhook=webhook, by=None)

    outcome = webhook_delivery_attempt(delivery_id=delivery.pk)

    assert outcome.delivery.status == "succeeded" and outcome.delivery.last_status_code == 204
    assert dns.lookups == ["internal.example.com"]
    (request,) = receiver.requests
    assert request.headers["Host"] == f"internal.example.com:{port}" and request.path == "/hook?x=1"


@pytest.mark.parametrize("allowed", [["127.0.0.1"], ["127.0.0.0/8"]])
def test_the_allow_list_lets_the_local_receiver_through(labelled_project, receiver_factory, settings, allowed):
    settings.WEBHOOK_ALLOWED_HOSTS = allowed
    receiver = receiver_factory(200)
    webhook = services.webhook_create(project=labelled_project.project, url=receiver.url, events=["label.created"], created_by=None)
    outcome = webhook_delivery_attempt(delivery_id=services.webhook_ping(webhook=webhook, by=None).pk)
    assert outcome.delivery.status == "succeeded" and len(receiver.requests) == 1


def test_allowing_all_private_networks_lets_the_local_receiver_through(labelled_project, receiver_factory, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    receiver = receiver_factory(200)
    webhook = services.webhook_create(project=labelled_project.project, url=receiver.url, events=["label.created"], created_by=None)
    assert webhook_delivery_attempt(delivery_id=services.webhook_ping(webhook=webhook, by=None).pk).delivery.status == "succeeded"


def test_the_log_keeps_status_and_timing_but_not_the_receivers_reply(client, labelled_project, receiver_factory, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    receiver = receiver_factory(500, 200)  # the receiver answers "answer 1: 500", then "answer 2: 200"
    webhook = services.webhook_create(project=labelled_project.project, url=receiver.url, events=["label.created"], created_by=None)
    delivery = services.webhook_ping(webhook=webhook, by=None)
    while webhook_delivery_attempt(delivery_id=delivery.pk, backoff_base=0).retry_in is not None:
        pass

    delivery = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (delivery.status, delivery.last_status_code) == ("succeeded", 200)
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery).values("status_code", "duration_ms", "error", "started_at"))
    assert [a["status_code"] for a in attempts] == [500, 200] and all(a["duration_ms"] >= 0 and a["started_at"] for a in attempts)
    assert "last_response" not in {field.name for field in WebhookDelivery._meta.get_fields()}
    stored = repr(list(WebhookDelivery.objects.filter(pk=delivery.pk).values())) + repr(attempts)
    assert "answer 1" not in stored and "answer 2" not in stored
    client.force_login(labelled_project.manager)
    html = client.get(reverse("webhooks:project_webhooks", args=[labelled_project.project.pk])).content.decode()
    assert "HTTP 500" in html and "HTTP 200" in html and "answer 1" not in html and "Last answer" not in html


def test_only_http_and_https_are_sent(labelled_project):
    result = outbound.post("file:///etc/passwd", b"{}", {}, timeout=1)
    assert (
        result.status_code is None
        and result.error == "blocked: webhook URL 'file:///etc/passwd': only http:// and https:// URLs are allowed"
    )


@pytest.fixture
def tls_receiver(tmp_path):
    """An HTTPS receiver on 127.0.0.1 with a certificate for hooks.example.com from a throw-away CA; records SNI names."""
    import ssl
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=hooks.example.com")
    (tmp_path / "ext").write_text("subjectAltName=DNS:hooks.example.com\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem",
            "-days", "2", "-extfile", "ext")  # fmt: skip
    server_names: list[str | None] = []
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    server_context.sni_callback = lambda sock, name, context: server_names.append(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client_context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    yield SimpleNamespace(port=server.server_address[1], server_names=server_names, client_context=client_context)
    server.shutdown()
    server.server_close()


def test_https_sends_the_host_name_as_sni_and_checks_the_certificate_against_it(tls_receiver, monkeypatch, settings):
    """Connected to the checked address (127.0.0.1, allowed here), yet TLS is about the URL's host name: the certificate
    for hooks.example.com passes, and the same server reached under another name fails the host name check."""
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.0/8"]
    monkeypatch.setattr(outbound, "tls_context", lambda: tls_receiver.client_context)
    monkeypatch.setattr(outbound, "resolve", Resolver({"hooks.example.com": ["127.0.0.1"], "other.example.com": ["127.0.0.1"]}))

    good = outbound.post(f"https://hooks.example.com:{tls_receiver.port}/in", b"{}", {}, timeout=5)
    assert (good.status_code, good.error) == (200, "")
    assert tls_receiver.server_names == ["hooks.example.com"]

    wrong = outbound.post(f"https://other.example.com:{tls_receiver.port}/in", b"{}", {}, timeout=5)
    assert wrong.status_code is None and "SSLCertVerificationError" in wrong.error and "other.example.com" in wrong.error
