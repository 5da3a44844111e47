"""Input and output shapes of the alignment endpoints: corpora, documents, pairs, runs, candidates.

Output serializers only read; input serializers only check the shape and the ids the user
may name (querysets come from the request's user). The writes themselves are the
services' (``alignment.services``, ``alignment.aligning.service``).
"""

from __future__ import annotations

from rest_framework import serializers

from alignment.forms import MEASURE_CHOICES, PARAGRAPH_CHOICES, PRIMARY_MEASURE_CHOICES
from alignment.models import AlignmentRun, CandidateAlignment, Corpus, Document, DocumentPair, Paragraph, Sentence
from webapp.api.schema_fields import enum_field


class CorpusSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    document_count = serializers.IntegerField(read_only=True)
    pair_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Corpus
        fields = [
            "id", "name", "language", "description", "owner", "is_shared", "level_order", "pairing", "metadata",
            "created_at", "document_count", "pair_count",
        ]  # fmt: skip
        read_only_fields = fields


class CorpusCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    language = serializers.CharField(max_length=16, help_text="ISO 639 code, e.g. en or de.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    is_shared = serializers.BooleanField(required=False, default=False)
    level_order = serializers.ListField(
        child=serializers.CharField(max_length=32), required=False, default=list,
        help_text="Levels from most complex to simplest.",
    )  # fmt: skip
    pairing = serializers.ChoiceField(choices=Corpus.Pairing.choices, required=False, default=Corpus.Pairing.ALL)
    metadata = serializers.DictField(required=False, default=dict, help_text="Licence, source and similar facts for dataset cards.")

    def validate_name(self, value: str) -> str:
        from alignment.selectors import corpus_name_refusal

        refusal = corpus_name_refusal(self.context["request"].user, value)  # never confirms another user's private corpus
        if refusal:
            raise serializers.ValidationError(refusal)
        return value


class DocumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Document
        fields = ["id", "corpus", "external_id", "title", "level", "created_at"]
        read_only_fields = fields


class SentenceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Sentence
        fields = ["id", "index", "index_in_paragraph", "text", "char_start", "char_end"]
        read_only_fields = fields


class ParagraphSerializer(serializers.ModelSerializer):
    sentences = SentenceSerializer(source="sentence_rows", many=True, read_only=True)

    class Meta:
        model = Paragraph
        fields = ["id", "index", "char_start", "char_end", "sentences"]
        read_only_fields = fields


class DocumentDetailSerializer(serializers.ModelSerializer):
    """A document with its text and structure; the view attaches ``paragraph_rows`` (two queries)."""

    paragraphs = ParagraphSerializer(source="paragraph_rows", many=True, read_only=True)

    class Meta:
        model = Document
        fields = ["id", "corpus", "external_id", "title", "level", "source", "raw_text", "created_at", "paragraphs"]
        read_only_fields = fields


class PairSerializer(serializers.ModelSerializer):
    complex_document = DocumentSerializer(read_only=True)
    simple_document = DocumentSerializer(read_only=True)

    class Meta:
        model = DocumentPair
        fields = ["id", "corpus", "origin", "complex_document", "simple_document", "created_at"]
        read_only_fields = fields


class AlignmentRunSerializer(serializers.ModelSerializer):
    """A run's status and progress; poll it while ``status`` is queued or running."""

    percent = serializers.IntegerField(read_only=True)
    measures = serializers.ListField(child=serializers.CharField(), read_only=True)
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, allow_null=True, default=None)
    model_label = serializers.CharField(
        read_only=True, help_text='The model by name: "the shipped default model", "the hand-calibrated MiniLM aligner", "v2", ...; '
        "model_version has its directory's name and checksum.",
    )  # fmt: skip
    model_version = serializers.CharField(
        source="model_version_public", read_only=True,
        help_text='The weights: "default_model (sha256 …)", "project-3/v2 (sha256 …)" (no server directory), or "untrained (hand-calibrated)".',
    )  # fmt: skip

    class Meta:
        model = AlignmentRun
        fields = [
            "id", "corpus", "scope", "status", "cancel_requested", "percent", "pairs_total", "pairs_done", "sentences_done",
            "candidates_written", "label_counts", "measures", "config", "model_version", "model_label", "encoder_seconds", "measure_seconds",
            "aligner_seconds", "busy_seconds", "error", "attempts", "created_by", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class AlignmentRunCreateSerializer(serializers.Serializer):
    """What the corpus and pair pages ask for when starting a run; the corpus queryset is the user's visible ones."""

    corpus = serializers.PrimaryKeyRelatedField(queryset=Corpus.objects.none())
    pairs = serializers.PrimaryKeyRelatedField(
        queryset=DocumentPair.objects.none(), many=True, required=False,
        help_text="The document pairs to align; leave out to align every pair of the corpus.",
    )  # fmt: skip
    measure = enum_field(
        "PrimaryMeasureEnum", PRIMARY_MEASURE_CHOICES, default="learned",
        help_text="The measure the CRF aligns with: 'learned' is the shipped default model (or ALIGNER_MODEL_DIR's), any other "
        "runs the hand-calibrated aligner on that measure.",
    )  # fmt: skip
    paragraph_variant = serializers.ChoiceField(choices=PARAGRAPH_CHOICES, default="newsela")
    also_score = serializers.ListField(
        child=enum_field("MeasureEnum", MEASURE_CHOICES), required=False,
        default=["tfidf_cosine", "char3_tfidf_cosine", "jaccard"],
        help_text="Extra measures stored for every candidate, for comparison and disagreement.",
    )  # fmt: skip

    def __init__(self, *args, corpora=None, pairs=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if corpora is not None:
            self.fields["corpus"].queryset = corpora
        if pairs is not None:
            self.fields["pairs"].child_relation.queryset = pairs

    def validate(self, data: dict) -> dict:
        foreign = [pair.pk for pair in data.get("pairs", []) if pair.corpus_id != data["corpus"].pk]
        if foreign:
            raise serializers.ValidationError({"pairs": f"document pairs {foreign} do not belong to corpus {data['corpus'].pk}"})
        if "pairs" in data and not data["pairs"]:
            raise serializers.ValidationError({"pairs": "give at least one document pair, or leave the field out to align the corpus"})
        return data


class CandidateSerializer(serializers.ModelSerializer):
    simple_index = serializers.IntegerField(source="simple_sentence.index", read_only=True)
    complex_index = serializers.IntegerField(source="complex_sentence.index", read_only=True)
    simple_text = serializers.CharField(source="simple_sentence.text", read_only=True)
    complex_text = serializers.CharField(source="complex_sentence.text", read_only=True)
    label = enum_field("CandidateLabelEnum", CandidateAlignment.Label.choices, read_only=True, help_text="The aligner's verdict.")

    class Meta:
        model = CandidateAlignment
        fields = [
            "id", "run", "pair", "simple_sentence", "complex_sentence", "simple_index", "complex_index", "simple_text",
            "complex_text", "label", "score", "scores", "crf_marginal", "group_index", "group_score", "disagreement",
        ]  # fmt: skip
        read_only_fields = fields
