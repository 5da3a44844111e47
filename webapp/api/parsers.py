"""The API's JSON parser: DRF's, refusing bodies the app cannot handle with a 400 instead of a 500.

Deeply nested JSON made DRF's parser raise ``RecursionError``; a ``"\\ud800"`` escape or a
``"\\u0000"`` in any string reached PostgreSQL and failed there. The checks are the import's
(:mod:`alignment.importing.json_input`), so both kinds of input follow one set of rules.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from alignment.importing.json_input import MAX_JSON_DEPTH, JsonInputError, json_value_check


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep") from None
        try:
            json_value_check(data)
        except JsonInputError as exc:
            raise ParseError(f"JSON body refused - {exc}") from None
        return data
