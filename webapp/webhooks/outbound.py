"""Outbound webhook requests that cannot be pointed at the server's own network (SSRF).

A webhook URL is chosen by any project manager, and the worker that sends it sits inside
the operator's network: without a check, ``http://127.0.0.1:5432/`` or the cloud metadata
service at ``169.254.169.254`` would be reachable from outside. So every destination is
resolved, *every* address it resolves to must be public, and the connection is opened to
the very address that was checked (never by name again), which leaves no window for DNS
rebinding between the check and the connect. HTTPS still verifies the certificate against
the URL's host name (SNI and hostname check), and the ``Host`` header is the URL's host.

Operators who deliberately run receivers on a private network list them in
``WEBHOOK_ALLOWED_HOSTS`` (host names, IP addresses or networks in CIDR form), or allow all
private addresses with ``WEBHOOK_ALLOW_PRIVATE_NETWORKS``. Both are off by default.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")
ALLOW_HINT = "webhooks may only reach public addresses (an operator can allow a private receiver with WEBHOOK_ALLOWED_HOSTS)"


class BlockedDestination(ValueError):
    """The URL's scheme or host is not allowed; the message says which and why."""


@dataclass(frozen=True)
class Destination:
    """A checked URL: where to connect (``addresses``, all allowed) and what to ask for."""

    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line
    addresses: list[str]


@dataclass(frozen=True)
class PostResult:
    status_code: int | None
    error: str


def resolve(host: str, port: int) -> list[str]:
    """All addresses ``host`` resolves to, in the resolver's order (the seam tests replace to play DNS)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def address_problem(address: IPAddress) -> str:
    """Why ``address`` must not be reached ('' when it is a public unicast address)."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        problem = address_problem(embedded)
        return f"{problem} (embedded in {address})" if problem else ""
    for kind, flagged in (
        ("an unspecified", address.is_unspecified),
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),  # 169.254.169.254: the cloud metadata service
        ("a multicast", address.is_multicast),
        ("a private", address.is_private),
        ("a reserved", address.is_reserved),
    ):
        if flagged:
            return f"{kind} address"
    if not address.is_global:  # 100.64.0.0/10 (carrier-grade NAT) and other special-purpose ranges
        return "a non-public (special-purpose) address"
    return ""


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, 6to4, Teredo, NAT64), else None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64_PREFIX:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _allowed_explicitly(host: str, address: IPAddress) -> bool:
    if getattr(settings, "WEBHOOK_ALLOW_PRIVATE_NETWORKS", False):
        return True
    for entry in getattr(settings, "WEBHOOK_ALLOWED_HOSTS", []):
        entry = entry.strip().lower().strip("[]")
        if entry == host.lower():
            return True
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:  # a host name that is not this one
            continue
    return False


def _split(url: str) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise BlockedDestination(f"webhook URL {url!r}: only http:// and https:// URLs are allowed")
    try:
        host, port = parts.hostname, parts.port or (443 if scheme == "https" else 80)
    except ValueError as error:  # a port out of range or not a number
        raise BlockedDestination(f"webhook URL {url!r}: {error}") from None
    if not host:
        raise BlockedDestination(f"webhook URL {url!r} has no host")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port, target


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def addresses_check(host: str, addresses: list[str]) -> None:
    """BlockedDestination naming the first address of ``host`` that is not allowed."""
    literal = _is_ip_literal(host)
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
        problem = address_problem(address)
        if problem and not _allowed_explicitly(host, address):
            said = host if literal else f"{host} resolves to {address}, which"
            raise BlockedDestination(f"{said} is {problem}: {ALLOW_HINT}.")


def destination_check(url: str, *, unresolvable_ok: bool = False) -> Destination:
    """Resolve the URL's host and check every address; BlockedDestination says what is wrong.

    ``unresolvable_ok`` is for saving a webhook: a name that does not resolve (yet) is not
    refused then, because the check is made again, for real, before every send.
    """
    scheme, host, port, target = _split(url)
    if _is_ip_literal(host):
        addresses = [host]  # nothing to resolve
    else:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as error:
            if unresolvable_ok:
                return Destination(scheme, host, port, target, [])
            raise BlockedDestination(f"{host} does not resolve: {error}") from None
    if not addresses:
        raise BlockedDestination(f"{host} resolves to no address")
    addresses_check(host, addresses)
    return Destination(scheme, host, port, target, addresses)


def tls_context() -> ssl.SSLContext:
    """The system's trusted CAs, certificate and host name checked (the seam tests use to trust their own CA)."""
    return ssl.create_default_context()


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) to ``host`` as far as the request and TLS are concerned, connected to the checked ``address``."""

    def __init__(self, host: str, port: int, *, address: str, tls: bool, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address, self._tls = address, tls

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        if self._tls:  # certificate checked against the URL's host name, which is also the SNI name
            sock = tls_context().wrap_socket(sock, server_hostname=self.host)
        self.sock = sock


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> PostResult:
    """POST ``body`` to a checked destination; never raises, reports. No redirect is followed, and
    the receiver's answer is not read beyond its status line: it is not ours to keep."""
    try:
        destination = destination_check(url)
    except BlockedDestination as error:
        return PostResult(None, f"blocked: {error}")
    error_text = ""
    for address in destination.addresses:  # like a browser: the next address when one refuses
        connection = _PinnedConnection(
            destination.host, destination.port, address=address, tls=destination.scheme == "https", timeout=timeout
        )
        try:
            connection.request("POST", destination.target, body=body, headers=headers)
            response = connection.getresponse()
            status, reason, location = response.status, response.reason, response.getheader("Location", "?")
        except (OSError, http.client.HTTPException) as error:  # refused, timeout, TLS, malformed answer
            error_text = f"{type(error).__name__}: {error}"
            if isinstance(error, ConnectionRefusedError):
                continue
            return PostResult(None, error_text)
        finally:
            connection.close()
        if 300 <= status < 400:
            return PostResult(status, f"redirect to {location} not followed")
        if not 200 <= status < 300:
            return PostResult(status, f"HTTP {status} {reason}")
        return PostResult(status, "")
    return PostResult(None, error_text)
