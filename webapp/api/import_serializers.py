"""Input and output shapes of the import endpoint (``/api/imports/``).

The input serializer only describes the multipart body for the OpenAPI schema: the body is
judged by the Import page's own form (:class:`alignment.forms.CorpusImportForm`), so the
rules live in one place. Its choices, defaults and help come from that form, so the two
cannot drift apart.
"""

from __future__ import annotations

from rest_framework import serializers

from alignment.forms import CorpusImportForm
from alignment.importing.models import ImportJob
from webapp.api.schema_fields import enum_field

FORM_FIELDS = CorpusImportForm.base_fields


def _choices(name: str) -> list[tuple[str, str]]:
    return [(str(value), str(label)) for value, label in FORM_FIELDS[name].choices]


def _optional(name: str) -> dict:
    """Keyword arguments of an optional field that defaults to the form's initial value, as the page shows it."""
    field = FORM_FIELDS[name]
    return {"required": False, "default": str(field.initial), "help_text": field.help_text}


class ImportCreateSerializer(serializers.Serializer):
    """The Import page's form as a multipart body; only ``corpus_name`` and ``files`` are required."""

    corpus_name = serializers.CharField(max_length=200, help_text=FORM_FIELDS["corpus_name"].help_text)
    language = serializers.CharField(max_length=16, **_optional("language"))
    format = enum_field("ImportFormatEnum", _choices("format"), **_optional("format"))
    paragraph_mode = enum_field("ParagraphModeEnum", _choices("paragraph_mode"), **_optional("paragraph_mode"))
    filename_pattern = serializers.CharField(max_length=FORM_FIELDS["filename_pattern"].max_length, **_optional("filename_pattern"))
    drop_level_header = serializers.BooleanField(required=False, default=False, help_text=FORM_FIELDS["drop_level_header"].help_text)
    pairing = enum_field("ImportPairingEnum", _choices("pairing"), **_optional("pairing"))
    level_order = serializers.CharField(
        required=False, allow_blank=True, max_length=FORM_FIELDS["level_order"].max_length, help_text=FORM_FIELDS["level_order"].help_text
    )
    files = serializers.ListField(
        child=serializers.FileField(), min_length=1,
        help_text="One or more files (repeat the part: `-F files=@a.txt -F files=@b.txt`).",
    )  # fmt: skip


class ImportFileResultSerializer(serializers.Serializer):
    """What happened to one uploaded file (``alignment.importing.service.FileImportResult``)."""

    file = serializers.CharField()
    documents_created = serializers.IntegerField()
    documents_unchanged = serializers.IntegerField()
    sentences_created = serializers.IntegerField()
    control_characters_removed = serializers.IntegerField()
    punctuation_repaired = serializers.IntegerField()
    paragraph_mode = serializers.CharField(help_text="Text format: the mode its paragraphs were read with (what `auto` found).")
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(allow_null=True, help_text="Why the file was not imported; null when it was.")


class ImportJobSerializer(serializers.ModelSerializer):
    """An import job's status, progress and per-file report; poll ``url`` while ``status`` is queued or running."""

    url = serializers.HyperlinkedIdentityField(view_name="api:import-detail", help_text="This job in the API.")
    percent = serializers.IntegerField(read_only=True)
    files_done = serializers.IntegerField(read_only=True)
    results = ImportFileResultSerializer(many=True, read_only=True, help_text="One entry per file done, in upload order.")
    created_by = serializers.CharField(source="created_by.get_username", read_only=True)

    class Meta:
        model = ImportJob
        fields = [
            "id", "url", "status", "cancel_requested", "percent", "corpus_name", "language", "pairing", "options", "corpus", "corpus_created",
            "corpus_removed", "files_total", "files_done", "results", "pairs_created", "direction", "language_note", "embedding_run", "alignment_run", "error",
            "attempts", "created_by", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields
