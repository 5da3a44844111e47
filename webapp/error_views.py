"""Error responses: the app's own pages for 400/403/404/500 and CSRF failures, JSON under ``/api/``.

None of them shows a traceback, URL patterns or settings, whatever ``DEBUG`` says for
the page itself. The 500 view must answer even when the failure is in the database,
the session or the templates, so it falls back to a self-contained page.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

_API_PREFIX = "/api/"

_JSON_DETAIL = {
    400: "Bad request.",
    403: "You do not have permission to perform this action.",
    404: "Not found.",
    500: "Server error. The error was logged; try again in a moment.",
}

# No template, no context, no database: what the 500 view answers when rendering 500.html failed too.
_BARE_500 = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Server error · Sentence Aligner</title></head>
<body><h1>Something went wrong on our side</h1>
<p>The error was logged. Try again in a moment, or <a href="/">go back to the start page</a>.</p></body></html>
"""


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(_API_PREFIX)


def _page(request: HttpRequest, template: str, status: int, context: dict[str, object] | None = None) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": _JSON_DETAIL[status]}, status=status)
    return HttpResponse(render_to_string(template, context or {}, request=request), status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, "400.html", 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, "403.html", 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, "404.html", 404, {"path": request.path})


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: usually an expired session or a form left open across a log-in."""
    return _page(request, "403_csrf.html", 403)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": _JSON_DETAIL[500]}, status=500)
    try:
        return HttpResponse(render_to_string("500.html", {}, request=request), status=500)
    except Exception:  # the page must answer whatever broke (database down, a template error ...)
        logger.exception("rendering 500.html failed; answering the bare error page")
        return HttpResponse(_BARE_500, status=500)
