"""Error responses: the app's own pages for 400/403/404/500 and CSRF failures, JSON under ``/api/``.

None of them shows a traceback, URL patterns or settings, whatever ``DEBUG`` says for
the page itself. The 500 view must answer even when the failure is in the database,
the session or the templates, so it falls back to a self-contained page. While the
database is away, :class:`DatabaseOutageLog` keeps the log to one line a request.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable

from django.db.backends.signals import connection_created
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from alignment.jobs.database import database_lost

logger = logging.getLogger(__name__)

_API_PREFIX = "/api/"

_JSON_DETAIL = {
    400: "Bad request.",
    403: "You do not have permission to perform this action.",
    404: "Not found.",
    500: "Server error. The error was logged; try again in a moment.",
    503: "The database is not answering (it may be restarting). Nothing saved is lost; try again in a few seconds.",
}
RETRY_AFTER_SECONDS = 5

# No template, no context, no database: what the 500 view answers when rendering 500.html failed too.
_BARE_500 = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Server error · Sentence Aligner</title></head>
<body><h1>Something went wrong on our side</h1>
<p>The error was logged. Try again in a moment, or <a href="/">go back to the start page</a>.</p></body></html>
"""


_BARE_503 = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>Back in a moment · Sentence Aligner</title></head>
<body><h1>Back in a moment</h1>
<p>The database is not answering (it may be restarting). Nothing you saved is lost, and labels still waiting on an
open annotation page are sent again by the page itself. This page reloads in 5 seconds.</p></body></html>
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


_CSRF_EXPIRED = "The page's security token is out of date (you logged in or out since it loaded): nothing was saved."


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: usually an expired session or a form left open across a log-in.

    A page's script that asks for JSON gets JSON with ``"reason": "csrf"``, so it can tell this
    refusal from a 403 about rights: it fetches a fresh token (``accounts:session``) and sends again.
    """
    if not _is_api(request) and "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"error": _CSRF_EXPIRED, "reason": "csrf"}, status=403)
    return _page(request, "403_csrf.html", 403)


def server_error(request: HttpRequest) -> HttpResponse:
    if database_lost(sys.exc_info()[1] or Exception()):  # Django calls handler500 while handling the exception
        return database_unavailable(request)
    if _is_api(request):
        return JsonResponse({"detail": _JSON_DETAIL[500]}, status=500)
    try:
        return HttpResponse(render_to_string("500.html", {}, request=request), status=500)
    except Exception:  # the page must answer whatever broke (database down, a template error ...)
        logger.exception("rendering 500.html failed; answering the bare error page")
        return HttpResponse(_BARE_500, status=500)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After while the database does not answer (a restart, a failover): a pause, not a crash.

    Scripts and the pages' save queues retry a 503 (annotate_saving.js keeps every unsent label).
    Self-contained: no template, session or database is needed to answer.
    """
    if _is_api(request) or "application/json" in request.headers.get("Accept", ""):
        response: HttpResponse = JsonResponse({"detail": _JSON_DETAIL[503]}, status=503)
    else:
        response = HttpResponse(_BARE_503, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


# A lost-database failure this long after the previous one starts a new outage (and logs its traceback again).
OUTAGE_QUIET_SECONDS = 60.0


class DatabaseOutage:
    """Whether this process is in a database outage: from its first lost-database failure until the database answers.

    The database answers again when a new connection to it is made (Django's ``connection_created``: a request
    after the outage reconnects), or when OUTAGE_QUIET_SECONDS passed without a failure. Per process: each web
    process logs its own first failure.
    """

    def __init__(self, *, quiet_seconds: float = OUTAGE_QUIET_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self._lock = threading.Lock()  # a threaded worker (WEB_THREADS > 1) fails several requests at once
        self._ongoing = False
        self._last_failure = -math.inf

    def failure_starts_outage(self) -> bool:
        """Record a lost-database failure; True when it is the first of an outage."""
        with self._lock:
            now = self.clock()
            first = not self._ongoing or now - self._last_failure > self.quiet_seconds
            self._ongoing, self._last_failure = True, now
            return first

    def database_answered(self, **signal_kwargs: object) -> None:
        with self._lock:
            self._ongoing = False


database_outage = DatabaseOutage()
connection_created.connect(database_outage.database_answered, weak=False, dispatch_uid="webapp.error_views.database_outage")


class DatabaseOutageLog(logging.Filter):
    """On ``django.request``: a request that failed for want of the database is one short line, with one traceback an outage.

    Django logs every request that raised with its traceback (about 8.6 KB here); while the database is away
    every request fails alike, so 88 s of outage under 20 clients wrote 25.9 MB of identical tracebacks. Now each
    such request logs ``GET /path 503: the database is not answering (OperationalError: <its first line>)``,
    and the first of an outage (:class:`DatabaseOutage`) keeps its traceback. Other errors are left as they are.
    """

    def __init__(self, outage: DatabaseOutage | None = None) -> None:
        super().__init__()
        self.outage = outage or database_outage

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "database_outage_seen", False):
            return True  # the filter is attached twice (logging configured again in the process): decide once a record
        error = record.exc_info[1] if record.exc_info else None
        if error is None or not database_lost(error):
            return True
        record.database_outage_seen = True
        request = getattr(record, "request", None)
        first_line = (str(error).strip().splitlines() or [""])[0]
        record.msg = "%s %s %s: the database is not answering (%s: %s)"
        record.args = (
            getattr(request, "method", "-"),
            getattr(request, "path", "-").encode("unicode_escape").decode("ascii"),  # as Django escapes it
            getattr(record, "status_code", "-"),
            type(error).__name__,
            first_line,
        )
        if self.outage.failure_starts_outage():
            record.msg += "; the traceback of this outage's first failure follows, the next ones log this line only"
        else:
            record.exc_info, record.exc_text = None, None
        return True
