"""Size limits enforced while an import upload streams in, not after it has been read whole.

Django's default upload handlers store the whole body (in memory up to
FILE_UPLOAD_MAX_MEMORY_SIZE, on disk past it) before a view sees a file, and the
import view then read each file into memory: a 300 MB upload grew the server by
300 MB before the size check refused it. :class:`ImportUploadLimit` goes first in
the handler chain and stops the parser the moment one file or the whole upload
passes its limit, so at most one chunk past the limit is ever held. The
``Content-Length`` check refuses an announced oversize body before any of it is read.

:func:`import_upload_guard` is the one way in, for the Import page, its preview and the
REST API alike: it installs the limit with the settings' sizes before anything reads the
body (DRF parses ``request.data`` lazily, through the same upload handlers), and the
limit's ``refusal`` then says whether to answer 413. Such a view is marked with :func:`takes_uploads`: every
other view's body is bounded by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` before it runs (webapp/lib/input_guard.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, QueryDict
from django.utils.datastructures import MultiValueDict

View = TypeVar("View", bound=Callable)


def takes_uploads(view: View) -> View:
    """Mark a view (a function, or a DRF view's class) whose body an upload guard bounds, by
    ``IMPORT_MAX_REQUEST_BYTES``, instead of the ``DATA_UPLOAD_MAX_MEMORY_SIZE`` every other view's body is held to."""
    view.takes_uploads = True  # type: ignore[attr-defined]
    return view


def view_takes_uploads(view: Callable) -> bool:
    """Whether a resolved view was marked with :func:`takes_uploads` (DRF's ``as_view`` keeps the class as ``cls``)."""
    return bool(getattr(view, "takes_uploads", False) or getattr(getattr(view, "cls", None), "takes_uploads", False))


def upload_too_large(request: HttpRequest, *, max_request_bytes: int) -> str | None:
    """A message when the request announces a body over ``max_request_bytes``, else None."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return "the request's Content-Length is not a number"
    if length > max_request_bytes:
        return f"the upload is {length:,} bytes, over the limit of {max_request_bytes:,} bytes for one import; nothing was imported"
    return None


class ImportUploadLimit(FileUploadHandler):
    """First upload handler of the import page: counts the bytes and stops the upload past a limit.

    It passes every chunk on unchanged to the default handlers; ``refusal`` says why it stopped.
    """

    def __init__(self, request: HttpRequest, *, max_file_bytes: int, max_request_bytes: int, max_files: int = 0) -> None:
        super().__init__(request)
        self.max_file_bytes = max_file_bytes
        self.max_request_bytes = max_request_bytes
        self.max_files = max_files  # 0: no bound of its own
        self.received_bytes = 0  # over all files: what the parser handed to the handlers
        self.file_bytes = 0
        self.files = 0
        self.refusal: str | None = None

    @classmethod
    def install(cls, request: HttpRequest, *, max_file_bytes: int, max_request_bytes: int, max_files: int = 0) -> ImportUploadLimit:
        """Put a limit first in ``request``'s handlers; call it before anything reads ``request.POST``."""
        handler = cls(request, max_file_bytes=max_file_bytes, max_request_bytes=max_request_bytes, max_files=max_files)
        request.upload_handlers.insert(0, handler)
        return handler

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        """Parse nothing when the request was refused before its body was read (whoever asks for the body later)."""
        if self.refusal:
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.file_bytes = 0
        self.files += 1
        if self.max_files and self.files > self.max_files:
            self._refuse(
                f"the upload has more than {self.max_files:,} files, the limit for one import; nothing was imported. "
                "Import them in parts (into the same corpus), or a folder with manage.py import_corpus"
            )

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.file_bytes += len(raw_data)
        self.received_bytes += len(raw_data)
        if self.file_bytes > self.max_file_bytes:
            self._refuse(f"{self.file_name}: the file is over the limit of {self.max_file_bytes:,} bytes; nothing was imported")
        if self.received_bytes > self.max_request_bytes:
            self._refuse(f"the upload is over the limit of {self.max_request_bytes:,} bytes for one import; nothing was imported")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the default handlers that follow build the file

    def _refuse(self, message: str) -> None:
        self.refusal = message
        # connection_reset: do not read (and discard) the rest of the body either.
        raise StopUpload(connection_reset=True)


def import_upload_guard(request: HttpRequest) -> ImportUploadLimit:
    """Install the import's upload limits on ``request``; call it before anything reads the body.

    The limit's ``refusal`` is set at once when the request announces a body over
    ``IMPORT_MAX_REQUEST_BYTES`` (answer 413 then: the body is never read, whoever parses it),
    and later, while the body streams in, when one file passes ``IMPORT_MAX_FILE_BYTES``,
    the whole upload passes ``IMPORT_MAX_REQUEST_BYTES`` or it has more than ``IMPORT_MAX_FILES`` files. ``request`` may be DRF's request,
    which hands ``META`` and ``upload_handlers`` through to Django's.
    """
    limit = ImportUploadLimit.install(
        request, max_file_bytes=settings.IMPORT_MAX_FILE_BYTES, max_request_bytes=settings.IMPORT_MAX_REQUEST_BYTES,
        max_files=settings.IMPORT_MAX_FILES,
    )  # fmt: skip
    limit.refusal = upload_too_large(request, max_request_bytes=settings.IMPORT_MAX_REQUEST_BYTES)
    return limit
