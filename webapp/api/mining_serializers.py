"""Input and output shapes of the mining endpoints: jobs, their statistics and their mined pairs.

A job's settings are checked by the start page's forms (``alignment.mining.starting``), so the page, ``manage.py
mine`` and the API accept the same ones. The request's documented settings are made from those forms' fields (names,
types, ranges, the values a setting left out takes), so the schema cannot drift from what is accepted.
"""

from __future__ import annotations

from django import forms
from rest_framework import serializers

from alignment.mining.models import MinedPair, MiningJob
from alignment.mining.starting import FORMS
from alignment.models import Corpus
from webapp.api.schema_fields import enum_field


class MiningStatisticsSerializer(serializers.Serializer):
    """The job page's figures, in the manner of the seed papers' tables."""

    pairs = serializers.IntegerField()
    source_tokens = serializers.FloatField(allow_null=True, help_text="Mean tokens per pair on the source side.")
    target_tokens = serializers.FloatField(allow_null=True, help_text="Mean tokens per pair on the target side.")
    source_multi = serializers.IntegerField(help_text="Pairs with more than one source sentence.")
    target_multi = serializers.IntegerField(help_text="Pairs with more than one target sentence.")
    shapes_1_1 = serializers.IntegerField(help_text="1:1 pairs.")
    source_multi_percent = serializers.FloatField()
    target_multi_percent = serializers.FloatField()


class MiningJobSerializer(serializers.ModelSerializer):
    """A job's status and progress; poll it while ``status`` is queued or running."""

    method = enum_field("MiningMethodEnum", MiningJob.Method.choices, read_only=True)
    retrieval = enum_field("MiningRetrievalEnum", MiningJob.Retrieval.choices, read_only=True)
    percent = serializers.IntegerField(read_only=True, help_text="documents_done of documents_total, in %.")
    unit = serializers.CharField(read_only=True, help_text="What documents_done counts (source documents, or MUSS's sequence steps).")
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = MiningJob
        fields = [
            "id", "method", "retrieval", "source_corpus", "target_corpus", "status", "cancel_requested", "percent", "unit",
            "documents_done", "documents_total", "shards_done", "shards_total", "pairs_found", "busy_seconds", "config", "error",
            "attempts", "created_by", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class MiningJobDetailSerializer(MiningJobSerializer):
    """A job with its statistics (the view attaches ``statistics``: one aggregate over its pairs)."""

    statistics = MiningStatisticsSerializer(read_only=True)

    class Meta(MiningJobSerializer.Meta):
        fields = [*MiningJobSerializer.Meta.fields, "statistics"]
        read_only_fields = fields


class MiningJobSourceSerializer(serializers.Serializer):
    """What a new job mines; the view checks only these two, the settings go to the forms as they came."""

    source_corpus = serializers.PrimaryKeyRelatedField(
        queryset=Corpus.objects.none(), help_text="LHA: the corpus mined from; MUSS: the corpus mined. You must own it (or be staff)."
    )
    method = enum_field("MiningMethodEnum", MiningJob.Method.choices, default="lha")

    def __init__(self, *args, corpora=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if corpora is not None:
            self.fields["source_corpus"].queryset = corpora


def _described(name: str, field: forms.Field) -> str:
    """A form's words for one setting: its label, the form's hint, and what leaving it out means."""
    if name == "target_corpus":
        return "the target corpus, in the other style; a corpus you may see. Required."
    hint = f" ({field.help_text})" if field.help_text else ""
    if name == "language":
        left_out = " Left out: the corpus's language when it is en or de, else en."
    elif field.initial is not None:
        left_out = f" Left out: {field.initial}."
    else:
        left_out = " Left out: the method's default." if field.required else " Empty or left out: the method's default."
    return f"{field.label or name.replace('_', ' ')}{hint}.{left_out}"


def _setting(name: str, field: forms.Field, description: str) -> serializers.Field:
    """The documented shape of one form field (the form checks it: these fields only describe it)."""
    described = {"required": False, "help_text": description}
    if isinstance(field, forms.ModelChoiceField):
        return serializers.IntegerField(**described)
    if isinstance(field, forms.ChoiceField):
        return enum_field(f"Mining{name.title().replace('_', '')}SettingEnum", field.choices, allow_blank=True, **described)
    bounds = {"min_value": field.min_value, "max_value": field.max_value, "allow_null": not field.required}
    if isinstance(field, forms.FloatField):
        return serializers.FloatField(**bounds, **described)
    return serializers.IntegerField(**bounds, **described)


def _settings_fields() -> dict[str, serializers.Field]:
    """Every setting of either form once (retrieval and language are both's), described per method."""
    fields: dict[str, forms.Field] = {}
    descriptions: dict[str, dict[str, list[str]]] = {}  # setting -> its words -> the methods that say them
    for method, form_class in FORMS.items():
        for name, field in form_class().fields.items():  # an instance: some hints are made in __init__
            fields.setdefault(name, field)
            descriptions.setdefault(name, {}).setdefault(_described(name, field), []).append(method.upper())
    return {
        name: _setting(name, field, " ".join(f"{' and '.join(methods)}: {words}" for words, methods in descriptions[name].items()))
        for name, field in fields.items()
    }


MiningJobCreateSerializer = type(MiningJobSourceSerializer)(
    "MiningJobCreateSerializer",
    (MiningJobSourceSerializer,),
    {
        **_settings_fields(),
        "__doc__": "A new job: the corpus, the method and the start form's settings by their field names (the schema only).",
        "__module__": __name__,
    },
)


class MinedPairSerializer(serializers.ModelSerializer):
    source_sentences = serializers.ListField(child=serializers.IntegerField(), read_only=True, help_text="0-based sentence indices.")
    target_sentences = serializers.ListField(child=serializers.IntegerField(), read_only=True, help_text="0-based sentence indices.")
    source_numbers = serializers.CharField(read_only=True, help_text='The sentences numbered from 1, as the pages show them: "3–5".')
    target_numbers = serializers.CharField(read_only=True, help_text='The sentences numbered from 1, as the pages show them: "3".')
    shape = serializers.CharField(read_only=True, help_text='Sentences per side: "1:1", "2:1"...')
    features = serializers.JSONField(read_only=True, help_text="The method's attributes (MUSS: cosine, margin and ACCESS).")

    class Meta:
        model = MinedPair
        fields = [
            "id", "source_document", "target_document", "source_sentences", "target_sentences", "source_numbers", "target_numbers",
            "source_text", "target_text", "shape", "score", "doc_score", "length_ratio", "overlap", "features",
        ]  # fmt: skip
        read_only_fields = fields
