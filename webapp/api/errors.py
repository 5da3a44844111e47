"""The REST API's side of :func:`alignment.errors.error_answer`: a service's refusal as DRF's exception."""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError

from alignment.errors import error_answer


class ChangedMeanwhile(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def api_error(error: Exception) -> APIException:
    """What to raise for a service's refusal: 400 with the message under its field (``non_field_errors``
    when it has none), 403, or 409. Anything that is not a refusal is raised again: it is a bug."""
    answer = error_answer(error)
    if answer.status == status.HTTP_403_FORBIDDEN:
        return PermissionDenied(answer.message)
    if answer.status == status.HTTP_409_CONFLICT:
        return ChangedMeanwhile(answer.message)
    return ValidationError({answer.field or "non_field_errors": [answer.message]})
