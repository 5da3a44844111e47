"""django-filter FilterSets of the list endpoints (query parameters; unknown values give 400 naming the parameter)."""

from __future__ import annotations

import django_filters
from django import forms

from alignment.mining.models import MiningJob
from alignment.models import AlignmentRun, CandidateAlignment, Corpus, Document, DocumentPair
from annotation.labelling.item_events import item_events_open
from annotation.models import Assignment, ItemEvent, LabelEvent


class IdFilter(django_filters.NumberFilter):
    """An id: a whole number (NumberFilter alone would accept 1.5 and truncate it)."""

    field_class = forms.IntegerField


class CorpusFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Part of the corpus name.")

    class Meta:
        model = Corpus
        fields = ["language", "is_shared", "pairing"]


class DocumentFilter(django_filters.FilterSet):
    corpus = IdFilter(field_name="corpus")
    external_id = django_filters.CharFilter()
    level = django_filters.CharFilter()

    class Meta:
        model = Document
        fields = ["corpus", "external_id", "level"]


class PairFilter(django_filters.FilterSet):
    corpus = IdFilter(field_name="corpus")
    document = IdFilter(method="filter_document", help_text="Pairs with this document on either side.")

    class Meta:
        model = DocumentPair
        fields = ["corpus", "origin", "document"]

    def filter_document(self, queryset, name: str, value: int):
        from django.db.models import Q

        return queryset.filter(Q(complex_document_id=value) | Q(simple_document_id=value))


class AlignmentRunFilter(django_filters.FilterSet):
    corpus = IdFilter(field_name="corpus")
    pair = IdFilter(field_name="pairs", distinct=True, help_text="Runs whose scope includes this document pair.")

    class Meta:
        model = AlignmentRun
        fields = ["corpus", "status", "scope", "pair"]


class MiningJobFilter(django_filters.FilterSet):
    corpus = IdFilter(method="filter_corpus", help_text="Jobs with this corpus as their source or their target.")
    source_corpus = IdFilter(field_name="source_corpus")
    target_corpus = IdFilter(field_name="target_corpus")

    class Meta:
        model = MiningJob
        fields = ["corpus", "source_corpus", "target_corpus", "status", "method", "retrieval"]

    def filter_corpus(self, queryset, name: str, value: int):
        from django.db.models import Q

        return queryset.filter(Q(source_corpus_id=value) | Q(target_corpus_id=value))


class CandidateFilter(django_filters.FilterSet):
    run = IdFilter(field_name="run")
    pair = IdFilter(field_name="pair")
    score_min = django_filters.NumberFilter(field_name="score", lookup_expr="gte", help_text="Primary measure's score at least this.")
    score_max = django_filters.NumberFilter(field_name="score", lookup_expr="lte", help_text="Primary measure's score at most this.")
    disagreement_min = django_filters.NumberFilter(field_name="disagreement", lookup_expr="gte")

    class Meta:
        model = CandidateAlignment
        fields = ["run", "pair", "label", "score_min", "score_max", "disagreement_min"]


class AssignmentFilter(django_filters.FilterSet):
    pair = IdFilter(field_name="pair")
    annotator = django_filters.CharFilter(field_name="annotator__username", help_text="The annotator's username.")
    completed = django_filters.BooleanFilter(field_name="completed_at", lookup_expr="isnull", exclude=True)

    class Meta:
        model = Assignment
        fields = ["pair", "annotator", "completed"]


class LabelEventFilter(django_filters.FilterSet):
    pair = IdFilter(field_name="pair")
    annotator = django_filters.CharFilter(field_name="annotator__username", help_text="The annotator's (or reviewer's) username.")
    simple_sentence = IdFilter(field_name="simple_sentence")
    complex_sentence = IdFilter(field_name="complex_sentence")

    class Meta:
        model = LabelEvent
        fields = ["pair", "annotator", "source", "simple_sentence", "complex_sentence"]


class ItemEventFilter(django_filters.FilterSet):
    pair = IdFilter(field_name="pair")
    annotator = django_filters.CharFilter(field_name="annotator__username", help_text="The annotator's username.")
    open = django_filters.BooleanFilter(
        method="filter_open",
        help_text="true: only what still stands (flags not removed, skips not undone, comments), as the project page lists them.",
    )

    class Meta:
        model = ItemEvent
        fields = ["pair", "annotator", "kind", "open"]

    def filter_open(self, queryset, name: str, value: bool | None):
        if value is None:
            return queryset
        standing = [event.pk for event in item_events_open(queryset)]
        return queryset.filter(pk__in=standing) if value else queryset.exclude(pk__in=standing)
