"""The signature receivers check: ``sha256=`` + hex HMAC-SHA256(secret, f"{timestamp}.{body}").

The timestamp is part of what is signed so a receiver can refuse old captured requests
(replays) by comparing X-Webhook-Timestamp with its clock.
"""

from __future__ import annotations

import hashlib
import hmac
import json

SIGNATURE_HEADER = "X-Webhook-Signature"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
EVENT_HEADER = "X-Webhook-Event"
DELIVERY_HEADER = "X-Webhook-Delivery"


def body_encode(payload: dict) -> bytes:
    """The exact bytes sent: JSON with sorted keys, so every attempt of a delivery sends the same body."""
    return json.dumps(payload, sort_keys=True).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signature_verify(secret: str, timestamp: str | int, body: bytes, header: str) -> bool:
    """What a receiver does (constant-time comparison); used by the tests as a receiver would."""
    return hmac.compare_digest(signature(secret, int(timestamp), body), header)
