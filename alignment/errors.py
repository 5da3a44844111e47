"""Typed service errors, and the one place a refused write becomes an HTTP answer (pages and API alike).

Services refuse with:

- :class:`ServiceError` for bad input; ``field`` names the input it is about (the form or API
  field of the same name), or is None when it is about the request as a whole. It is a
  ValueError, so a plain ValueError means the same with no field;
- a :class:`Conflict` when the thing changed since the client read it (another tab, another
  reviewer);
- PermissionError when the user's role does not allow the write.

:func:`error_answer` turns any of them into a status, a field and a message. Page views answer
it with :func:`error_json` or :func:`form_error`; the REST API's ``webapp.api.errors.api_error``
raises it as DRF's exception. It lives in ``alignment``, the lowest Django layer, because
every app's views use it and imports run downwards only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string


class ServiceError(ValueError):
    """A service refusing bad input; the message says what is wrong, ``field`` which input it is about."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Conflict(Exception):
    """The thing changed since the client read it: reload and decide again (HTTP 409)."""


@dataclass(frozen=True)
class ErrorAnswer:
    status: int  # 400 bad input, 403 not allowed, 409 changed meanwhile
    message: str
    field: str | None = None  # the input the message is about; None: the request as a whole


def error_answer(error: Exception) -> ErrorAnswer:
    """The HTTP answer to a service's refusal. Anything else is a bug, and is raised again."""
    if isinstance(error, Conflict):
        return ErrorAnswer(409, str(error))
    if isinstance(error, PermissionError):
        return ErrorAnswer(403, str(error))
    if isinstance(error, ValueError):
        return ErrorAnswer(400, str(error), getattr(error, "field", None))
    raise error


def error_json(error: Exception, **extra: object) -> JsonResponse:
    """A page's JSON answer to a refused write: ``{"error": message, **extra}`` with the status that fits."""
    answer = error_answer(error)
    return JsonResponse({"error": answer.message, **extra}, status=answer.status)


def form_error(form: forms.Form, error: Exception) -> None:
    """Show a refused write on the form: on its field when the form has it, else above the form."""
    answer = error_answer(error)
    form.add_error(answer.field if answer.field in form.fields else None, answer.message)


def bad_request(request: HttpRequest, reason: str, *, status: int = 400) -> HttpResponse:
    """400 (or ``status``: 413 for a body over its bound) naming what is wrong: JSON for the API and for pages' scripts
    (which ask for JSON), else the site's error page with ``reason`` (escaped: a reason may quote the input)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": reason}, status=status)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"error": reason}, status=status)
    return HttpResponse(render_to_string("400.html", {"reason": reason, "status": status}, request=request), status=status)
