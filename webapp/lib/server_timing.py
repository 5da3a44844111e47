"""A ``Server-Timing: app;dur=<ms>`` header on every response: the server's own time, for benchmarks and devtools.

It sits first in MIDDLEWARE, so it measures everything Django does for the request
(other middleware, the view, template rendering, database queries), not the network.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ServerTimingMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        response["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        return response
