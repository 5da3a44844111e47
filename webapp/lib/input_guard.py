"""Three rules every request goes through: a body within its bound, no NUL character in its query string or form fields,
and ``no-store`` on what a signed-in user is shown unless the view said how it may be cached.

* Size: Django holds a form or JSON body to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when a view reads it (and then the
  answer was a bare 400 with a traceback in the log), and a multipart body's files not at all: a file posted to any
  page streamed to the disk, however large. A request announcing a body over that bound is refused here with 413
  naming it, unread, unless its view takes uploads (the import's, held to ``IMPORT_MAX_REQUEST_BYTES`` by their own
  guard: alignment/importing/uploads.py). Without a ``Content-Length`` Django reads no body at all.

* NUL: PostgreSQL text cannot hold ``\\0``, so a NUL that reached a query failed as a 500 (a note's ``text`` on
  ``…/item-event/``). Django's form fields refuse it already; views that read ``request.POST`` themselves did not.
  Query strings and form-encoded bodies are checked here, before any view; a multipart body is left to the forms that
  read it (parsing it here would come before an upload's own handlers are set, alignment/importing/uploads.py).
* Caching: a signed-in page (a corpus, the Models page, ``/api/projects/``) sent without ``Cache-Control`` could be
  kept by a shared browser or proxy and shown after sign-out.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.utils.cache import patch_cache_control

from alignment.errors import bad_request
from alignment.importing.uploads import view_takes_uploads

FORM_ENCODED = "application/x-www-form-urlencoded"


class InputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        too_large = body_too_large(request)
        if too_large is not None:
            return bad_request(request, too_large, status=413)
        field = nul_field(request)
        if field is not None:
            return bad_request(request, f"{field}: contains a NUL character (\\0), which no text here can hold; remove it and send again")
        response = self.get_response(request)
        # The user as the request already read it (LoginRequiredMiddleware does, for every page that needs a sign-in):
        # reading it here would ask the database, which may be the very thing this response is about (a 503 in an outage).
        user = getattr(request, "_cached_user", None)
        if user is not None and user.is_authenticated and not response.has_header("Cache-Control"):
            patch_cache_control(response, private=True, no_store=True)
        return response


def body_too_large(request: HttpRequest) -> str | None:
    """Why the body ``request`` announces is over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` for its view, else None."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None  # Django reads such a body as empty
    if limit is None or length <= limit:
        return None
    try:
        if view_takes_uploads(resolve(request.path_info).func):
            return None
    except Resolver404:
        pass
    return (
        f"the request's body is {length:,} bytes, over the limit of {limit:,} bytes for one request "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE); nothing was read or stored. Files go in through Import."
    )


def nul_field(request: HttpRequest) -> str | None:
    """The name of the first query or form-encoded field (name or value) holding a NUL, else None."""
    sources = [("query", request.GET)]
    if request.method == "POST" and request.content_type == FORM_ENCODED:
        sources.append(("form", request.POST))
    for _, data in sources:
        for name, values in data.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return name.replace("\x00", "\\0") or "(a field without a name)"
    return None
