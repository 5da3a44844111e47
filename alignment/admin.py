from django.contrib import admin

from alignment.importing.models import ImportJob
from alignment.models import (
    AlignedPair,
    AlignmentRun,
    CandidateAlignment,
    Corpus,
    Document,
    DocumentPair,
    EmbeddingRun,
    Encoder,
    Paragraph,
    ParagraphAlignment,
    Sentence,
    SentenceEmbedding,
)


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ["name", "language", "owner", "is_shared", "pairing", "created_at"]
    list_filter = ["language", "is_shared"]
    search_fields = ["name", "description"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "level", "corpus", "title", "created_at"]
    list_filter = ["corpus", "level"]
    search_fields = ["external_id", "title"]
    readonly_fields = ["content_hash", "created_at"]


@admin.register(Paragraph)
class ParagraphAdmin(admin.ModelAdmin):
    list_display = ["document", "index", "char_start", "char_end"]
    list_select_related = ["document"]
    raw_id_fields = ["document"]


@admin.register(Sentence)
class SentenceAdmin(admin.ModelAdmin):
    list_display = ["document", "index", "index_in_paragraph", "text"]
    list_select_related = ["document"]
    search_fields = ["text"]
    raw_id_fields = ["document", "paragraph"]


@admin.register(DocumentPair)
class DocumentPairAdmin(admin.ModelAdmin):
    list_display = ["__str__", "corpus", "created_at"]
    list_filter = ["corpus"]
    raw_id_fields = ["complex_document", "simple_document"]


@admin.register(Encoder)
class EncoderAdmin(admin.ModelAdmin):
    list_display = ["name", "dimensions", "created_at"]


@admin.register(SentenceEmbedding)
class SentenceEmbeddingAdmin(admin.ModelAdmin):
    list_display = ["sentence", "encoder", "created_at"]
    list_filter = ["encoder"]
    raw_id_fields = ["sentence"]
    exclude = ["vector"]  # 384 numbers are not for a form


@admin.register(EmbeddingRun)
class EmbeddingRunAdmin(admin.ModelAdmin):
    list_display = ["pk", "corpus", "encoder_name", "status", "embedded_sentences", "total_sentences", "created_at"]
    list_filter = ["status", "encoder_name"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    """The staged files are not listed: they are deleted when the job finishes."""

    list_display = ["pk", "corpus_name", "created_by", "status", "files_total", "pairs_created", "created_at"]
    list_filter = ["status"]
    raw_id_fields = ["corpus", "embedding_run", "alignment_run"]
    exclude = ["results"]


@admin.register(AlignmentRun)
class AlignmentRunAdmin(admin.ModelAdmin):
    list_display = ["pk", "corpus", "scope", "status", "pairs_done", "pairs_total", "candidates_written", "model_version", "created_at"]
    list_filter = ["status", "scope"]
    raw_id_fields = ["pairs"]
    readonly_fields = ["created_at", "started_at", "finished_at", "procrastinate_job_id"]


@admin.register(AlignedPair)
class AlignedPairAdmin(admin.ModelAdmin):
    list_display = ["pk", "run", "pair", "simple_count", "complex_count", "seconds"]
    raw_id_fields = ["run", "pair"]
    exclude = ["matrices"]  # compressed arrays: shown on the inspection page


@admin.register(ParagraphAlignment)
class ParagraphAlignmentAdmin(admin.ModelAdmin):
    list_display = ["pk", "run", "pair", "simple_paragraphs", "complex_paragraphs"]
    raw_id_fields = ["run", "pair"]


@admin.register(CandidateAlignment)
class CandidateAlignmentAdmin(admin.ModelAdmin):
    list_display = ["pk", "run", "pair", "simple_sentence", "complex_sentence", "label", "score", "crf_marginal", "disagreement"]
    list_filter = ["label"]
    raw_id_fields = ["run", "pair", "simple_sentence", "complex_sentence"]
