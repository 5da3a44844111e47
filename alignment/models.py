"""Corpora, documents and their structure, document pairs, embeddings and embedding runs.

The text hierarchy is stored explicitly (Document → Paragraph → Sentence) with character spans into the document's
cleaned text, so every later stage (alignment, annotation, export) refers to the same sentence ids and can show a
sentence in its original context.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, Q
from pgvector.django import VectorField

from alignment.jobs.models import FINISHED_STATUSES, Job, shard_summary


class Corpus(models.Model):
    """A collection of documents in one language, usually several reading levels per article."""

    class Pairing(models.TextChoices):
        ALL = "all", "every pair of levels"
        ADJACENT = "adjacent", "adjacent levels only"

    name = models.CharField(max_length=200, unique=True)
    language = models.CharField(max_length=16, help_text="ISO 639-1 code, e.g. en or de.")
    description = models.TextField(blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="corpora")
    is_shared = models.BooleanField(default=False, help_text="Visible to every signed-in user, not only the owner.")
    level_order = models.JSONField(
        default=list,
        blank=True,
        help_text='Levels from most complex to simplest, e.g. ["adv", "int", "ele"]. Decides which document of a pair is the complex one.',
    )
    pairing = models.CharField(max_length=16, choices=Pairing.choices, default=Pairing.ALL)
    metadata = models.JSONField(default=dict, blank=True, help_text="Licence, source and similar facts for dataset cards.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """One version (level) of one article. ``raw_text`` is the cleaned text that spans point into."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=300, help_text="Article id shared by all levels of the same article.")
    title = models.CharField(max_length=500, blank=True)
    level = models.CharField(max_length=32, help_text="Readability label such as adv or ele, or a number.")
    source = models.JSONField(default=dict, blank=True, help_text="File, line, detected encoding and cleaning report.")
    raw_text = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="Hash of id, level and sentence structure: re-imports are no-ops.")
    text_hash = models.CharField(max_length=64, db_index=True, help_text="Hash of the sentence structure alone, to spot copies.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["external_id", "level"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "content_hash"], name="document_unique_content_per_corpus"),
            models.UniqueConstraint(fields=["corpus", "external_id", "level"], name="document_unique_level_per_article"),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} [{self.level}]"


class Paragraph(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="paragraphs")
    index = models.PositiveIntegerField()
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()

    class Meta:
        ordering = ["document", "index"]
        constraints = [models.UniqueConstraint(fields=["document", "index"], name="paragraph_unique_index")]

    def __str__(self) -> str:
        return f"{self.document} ¶{self.index}"


class CurrentSentences(models.Manager):
    """The documents' current segmentation: a sentence split or merged on screen is retired (alignment/segmenting)."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(retired_by__isnull=True)


class Sentence(models.Model):
    """A sentence with its position in the document and in its paragraph, and its span in ``raw_text``.

    ``Sentence.objects`` is the current segmentation; a sentence that an edit on screen split or merged keeps its
    row (labels name it) with ``retired_by`` set, reachable through ``all_objects`` and foreign keys.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sentences")
    paragraph = models.ForeignKey(Paragraph, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField(help_text="0-based position in the document.")
    index_in_paragraph = models.PositiveIntegerField()
    text = models.TextField()
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()
    retired_by = models.ForeignKey(
        "alignment.SegmentEdit", null=True, blank=True, on_delete=models.PROTECT, related_name="retired_sentences",
        help_text="The sentence edit that split or merged it away; empty while it is part of the document.",
    )  # fmt: skip

    all_objects = models.Manager()  # retired sentences too (default_manager_name below keeps ``objects`` the default)
    objects = CurrentSentences()

    class Meta:
        ordering = ["document", "index"]
        default_manager_name = "objects"
        constraints = [
            models.UniqueConstraint(fields=["document", "index"], condition=Q(retired_by__isnull=True), name="sentence_unique_index"),
            models.CheckConstraint(condition=Q(char_end__gt=F("char_start")), name="sentence_span_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.document} #{self.index}"


class DocumentPair(models.Model):
    """A complex document and a simpler version of the same article: the unit that gets aligned."""

    class Origin(models.TextChoices):
        PAIRING = "pairing", "levels of one article"
        MINED = "mined", "sent to annotation from a mining job"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="pairs")
    complex_document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pairs_as_complex")
    simple_document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pairs_as_simple")
    origin = models.CharField(
        max_length=8, choices=Origin.choices, default=Origin.PAIRING,
        help_text="Mined pairs may join documents of two corpora; the level pairing never touches them.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["complex_document__external_id", "complex_document__level", "simple_document__level"]
        constraints = [
            models.UniqueConstraint(fields=["complex_document", "simple_document"], name="pair_unique"),
            models.CheckConstraint(condition=~Q(complex_document=F("simple_document")), name="pair_two_documents"),
        ]

    def __str__(self) -> str:
        return f"{self.complex_document} → {self.simple_document.level}"


class Encoder(models.Model):
    """A sentence encoder whose vectors are stored. Vectors of two encoders are never compared.

    Each encoder gets its own partial HNSW index over its rows (created by :func:`alignment.services.encoder_get_or_create`),
    because pgvector indexes need one fixed dimension and models differ in theirs.
    """

    name = models.CharField(max_length=300, unique=True)
    dimensions = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.dimensions}d)"

    @property
    def index_name(self) -> str:
        return f"sentence_embedding_hnsw_{self.pk}"


class SentenceEmbedding(models.Model):
    sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="embeddings")
    encoder = models.ForeignKey(Encoder, on_delete=models.CASCADE, related_name="embeddings")
    vector = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sentence", "encoder"], name="embedding_unique_per_encoder")]


class EmbeddingRun(Job):
    """One request to embed a corpus with one encoder, and its progress as the worker sees it.

    The task is idempotent: it embeds only sentences that have no vector for the
    encoder yet and commits each batch with its progress, so a killed worker
    loses at most the batch in flight and a retry continues where it stopped.
    """

    kind = "embedding"
    resumable = True

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="embedding_runs")
    encoder_name = models.CharField(max_length=300)
    total_sentences = models.PositiveIntegerField(default=0)
    already_embedded = models.PositiveIntegerField(default=0, help_text="Sentences that had a vector when the run (re)started.")
    embedded_sentences = models.PositiveIntegerField(default=0, help_text="Sentences with a vector so far, counting those already there.")
    batches_done = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"embed {self.corpus} with {self.encoder_name}: {self.status}"

    @property
    def shard_summary(self) -> str:
        return shard_summary(self.shards.all())

    @property
    def percent(self) -> int:
        if not self.total_sentences:
            return 100 if self.status == self.Status.SUCCEEDED else 0
        return min(100, round(100 * self.embedded_sentences / self.total_sentences))

    def _transition(self, from_statuses: tuple[str, ...], **values: Any) -> bool:
        """As every job's; once the run has finished (committed), alignment runs that wait for it go on at once."""
        won = super()._transition(from_statuses, **values)
        if won and values.get("status") in FINISHED_STATUSES:
            self.wake_alignment()
        return won

    def wake_alignment(self) -> None:
        """Once committed, the waiting tasks of the corpus's alignment runs go on: its vectors are stored, or it ended."""
        from alignment.aligning.embedding_wait import waiting_runs_wake  # it reads the alignment runs defined below

        transaction.on_commit(functools.partial(waiting_runs_wake, self.pk))


class EmbeddingShard(Job):
    """A range of a large embedding run's missing sentences (by id: after_id < id <= through_id, open-ended when
    through_id is null), embedded by its own task, so that several workers embed one corpus (alignment/embedding_shards.py)."""

    kind = "embedding shard"
    resumable = True  # a requeued shard embeds only the sentences still without a vector
    spreads = True  # its user's spare lanes too (alignment/jobs/enqueue.py)

    run = models.ForeignKey(EmbeddingRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    after_id = models.BigIntegerField()
    through_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="embedding_shard_unique")]

    def __str__(self) -> str:
        return f"shard {self.index} of embedding run {self.run_id}: {self.status}"

    @property
    def lane_user_id(self) -> int | None:
        """The run's owner: a run's shards share their owner's lanes (alignment/jobs/enqueue.py)."""
        return EmbeddingRun.objects.filter(pk=self.run_id).values_list("created_by_id", flat=True).first()


INTERACTIVE_PAIRS = 5  # an alignment run of at most this many pairs is someone waiting at a page
INTERACTIVE_PRIORITY = 10


class AlignmentRun(Job):
    """One request to align document pairs with one aligner configuration, and its progress.

    The pairs in scope are fixed when the run is created. The task aligns them one at a
    time and stores each pair's results (an :class:`AlignedPair`, its
    :class:`ParagraphAlignment` and :class:`CandidateAlignment` rows) in one
    transaction, so a crash loses at most the pair in flight, and running the task
    again skips pairs already stored. Runs never overwrite each other: every row
    they write carries the run, and the inspection view picks the run to show.
    """

    kind = "alignment"
    resumable = True

    class Scope(models.TextChoices):
        CORPUS = "corpus", "whole corpus"
        PAIRS = "pairs", "selected pairs"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="alignment_runs")
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.CORPUS)
    pairs = models.ManyToManyField(DocumentPair, related_name="alignment_runs", help_text="The pairs in scope, fixed at creation.")
    config = models.JSONField(
        default=dict, help_text="Aligner config (models_ml.aligning.aligner_config.AlignerConfig) and the measures scored."
    )
    model_version = models.CharField(max_length=300, help_text="Which aligner weights: 'untrained' or a model directory and its checksum.")
    cancel_requested = models.BooleanField(default=False)
    pairs_total = models.PositiveIntegerField(default=0)
    pairs_done = models.PositiveIntegerField(default=0)
    sentences_done = models.PositiveIntegerField(default=0, help_text="Simple plus complex sentences of the pairs done.")
    candidates_written = models.PositiveIntegerField(default=0)
    label_counts = models.JSONField(default=dict, blank=True, help_text="Candidates per predicted label.")
    encoder_seconds = models.FloatField(default=0.0, help_text="Time spent encoding sentences without a stored vector.")
    measure_seconds = models.FloatField(default=0.0, help_text="Time spent computing similarity matrices (encoder included).")
    aligner_seconds = models.FloatField(default=0.0, help_text="Time spent in paragraph alignment and the CRF.")
    busy_seconds = models.FloatField(default=0.0, help_text="Wall time of the pairs done, writes included.")
    waiting_for = models.ForeignKey(
        EmbeddingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The corpus's embedding run this run (or a shard of it) last waited for, instead of encoding the same sentences itself.",
    )  # fmt: skip
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"alignment run {self.pk} on {self.corpus}: {self.status}"

    @property
    def queue_priority(self) -> int:
        """A run of a few pairs (a pair page's "Align this pair again") goes before bulk work: someone is waiting for it."""
        return INTERACTIVE_PRIORITY if self.pairs_total <= INTERACTIVE_PAIRS else 0

    def waiting_note(self) -> str:
        """The corpus's embedding run this run waits for (alignment/aligning/embedding_wait.py), while it does."""
        waiting = self.waiting_for if self.waiting_for_id and self.is_active else None
        if waiting is None or not waiting.is_active:
            return ""
        done = f" ({waiting.embedded_sentences:,} of {waiting.total_sentences:,} sentences so far)" if waiting.total_sentences else ""
        return f"waiting for the corpus's embedding{done}, so that no sentence is encoded twice"

    @property
    def percent(self) -> int:
        if not self.pairs_total:
            return 100 if self.status == self.Status.SUCCEEDED else 0
        return min(100, round(100 * self.pairs_done / self.pairs_total))

    @property
    def pairs_per_second(self) -> float | None:
        return self.pairs_done / self.busy_seconds if self.busy_seconds else None

    @property
    def sentences_per_second(self) -> float | None:
        return self.sentences_done / self.busy_seconds if self.busy_seconds else None

    @property
    def shard_summary(self) -> str:
        return shard_summary(self.shards.all())

    @property
    def measures(self) -> list[str]:
        return list(self.config.get("measures", []))

    @property
    def primary_measure(self) -> str:
        return str(self.config.get("aligner", {}).get("measure", ""))

    @property
    def model_label(self) -> str:
        """The aligner's name as every page says it ("the shipped default model", "v2", ...); ``model_version`` has the path."""
        from alignment.aligning.model_names import run_model_label

        return run_model_label(self)

    @property
    def model_version_public(self) -> str:
        """``model_version`` as pages, the API and exports show it: name and checksum, no server directory."""
        from alignment.aligning.model_names import public_model_version

        return public_model_version(self.model_version) or ""


class AlignedPair(models.Model):
    """One document pair done by one run: what the heatmap needs, and the marker that makes reruns skip it.

    ``matrices`` is a compressed NumPy archive of (m, n) arrays, one per measure plus ``crf_marginal``:
    float16, but float32 for the measure the CRF decoded (so a re-decoding from it gives what the run gave);
    it is empty when m x n exceeds the stored-heatmap limit.
    ``viterbi`` lists, per simple sentence, the complex sentence indices of its state.
    """

    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="aligned_pairs")
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="aligned_pairs")
    simple_count = models.PositiveIntegerField()
    complex_count = models.PositiveIntegerField()
    matrices = models.BinaryField(blank=True, default=b"")
    viterbi = models.JSONField(default=list)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "pair"]
        constraints = [models.UniqueConstraint(fields=["run", "pair"], name="aligned_pair_unique_per_run")]

    def __str__(self) -> str:
        return f"{self.pair} in run {self.run_id}"


class ParagraphAlignment(models.Model):
    """A group of simple paragraphs aligned to a group of complex paragraphs (indices in each document)."""

    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="paragraph_alignments")
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="paragraph_alignments")
    simple_paragraphs = models.JSONField(default=list)
    complex_paragraphs = models.JSONField(default=list)

    class Meta:
        ordering = ["run", "pair", "pk"]
        indexes = [models.Index(fields=["run", "pair"])]


class CandidateAlignment(models.Model):
    """A (simple, complex) sentence pair the aligner considered, with every measure's score and its verdict.

    Candidates are the predicted groups' pairs plus each sentence's best-scoring pairs, so
    reviewers also see the near misses. ``disagreement`` is the spread of the measures'
    within-document percentile ranks for this pair: 0 when all measures rank it alike.
    """

    class Label(models.TextChoices):
        ALIGNED = "aligned"
        PARTIAL = "partial"
        NOT_ALIGNED = "not_aligned", "not aligned"

    # A run writes about 90 candidates a pair. Their run and pair are looked up through the two indexes below and the
    # unique constraint, which lead with them, so neither has an index of its own. Their sentences are kept by Django's
    # cascade and by the pair's database constraint, not by one of their own: a sentence is deleted only with its
    # document, whose pairs go in the same transaction, so a candidate stored while its document is deleted fails on
    # its pair (tests/alignment/test_candidate_integrity.py). A check per sentence, with the row lock it takes on the
    # sentence, was more than half of PostgreSQL's work on a run's candidates (docs/benchmarks.md, "Corpus scale").
    run = models.ForeignKey(AlignmentRun, on_delete=models.CASCADE, related_name="candidates", db_index=False)
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="candidates", db_index=False)
    simple_sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="candidates_as_simple", db_constraint=False)
    complex_sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="candidates_as_complex", db_constraint=False)
    scores = models.JSONField(default=dict, help_text="Score of every measure of the run, by measure name.")
    score = models.FloatField(help_text="The primary measure's score (the one the CRF saw).")
    crf_marginal = models.FloatField(help_text="P(the simple sentence's CRF state covers the complex one).")
    label = models.CharField(max_length=16, choices=Label.choices)
    group_index = models.IntegerField(null=True, blank=True, help_text="Predicted group within the pair; None when not aligned.")
    group_score = models.FloatField(null=True, blank=True)
    disagreement = models.FloatField(default=0.0)

    class Meta:
        ordering = ["run", "pair", "simple_sentence__index", "complex_sentence__index"]
        constraints = [models.UniqueConstraint(fields=["run", "simple_sentence", "complex_sentence"], name="candidate_unique_per_run")]
        indexes = [models.Index(fields=["run", "pair", "label"]), models.Index(fields=["pair", "run"])]

    def __str__(self) -> str:
        return f"{self.simple_sentence} ~ {self.complex_sentence} ({self.label})"


# Mining and import jobs live in their own modules; importing them here registers their models with this app.
from alignment.aligning.models import AlignmentShard, PairBlock  # noqa: E402, F401 - registers these models with this app
from alignment.importing.models import ImportJob, ImportJobFile  # noqa: E402, F401 - registers these models with this app
from alignment.mining.models import DocumentEmbedding, MinedPair, MiningDocumentVector, MiningJob, MiningSequence, MiningShard  # noqa: E402, F401 - as above
from alignment.segmenting.models import SegmentEdit  # noqa: E402, F401 - as above
