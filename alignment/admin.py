from django.contrib import admin

from alignment.models import Corpus, Document, DocumentPair, EmbeddingRun, Encoder, Paragraph, Sentence, SentenceEmbedding


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
