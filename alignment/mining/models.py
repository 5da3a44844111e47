"""Mining pseudo-parallel pairs from unpaired corpora: jobs split into shards, and the pairs they find.

A :class:`MiningJob` (LHA between a source and a target corpus, or MUSS within one corpus)
is prepared once (document vectors, shard ranges) and then run as many
:class:`MiningShard` tasks, each over a range of source documents, so several workers on
several machines share one job. Shards commit per source document and remember where they
stopped, so a crashed shard resumes; pairs are unique per job, so re-running never
duplicates them. :class:`DocumentEmbedding` holds document vectors (mean of the sentence
vectors) with a partial HNSW index per encoder, for the document nearest-neighbour step.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from pgvector.django import HalfVectorField, SparseVectorField, VectorField

from alignment.jobs.models import Job


class DocumentEmbedding(models.Model):
    document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="embeddings")
    encoder = models.ForeignKey("alignment.Encoder", on_delete=models.CASCADE, related_name="document_embeddings")
    vector = VectorField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document", "encoder"], name="one_document_vector_per_encoder")]


class MiningDocumentVector(models.Model):
    """Hybrid LHA: one document's character 3-gram TF-IDF under its job's one IDF version (``MiningJob.lexical_idf``),
    with a partial sparsevec HNSW index per job; the dense view is the document's :class:`DocumentEmbedding`."""

    job = models.ForeignKey("alignment.MiningJob", on_delete=models.CASCADE, related_name="document_vectors")
    document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="+")
    lexical = SparseVectorField(help_text="Unit TF-IDF of all the document's 3-grams, hashed, <= 1,000 non-zeros.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "document"], name="one_lexical_document_vector_per_job")]


class MiningJob(Job):
    """One mining request; its status and attempts are the prepare step's, its shards carry their own."""

    kind = "mining"
    resumable = True  # prepare is idempotent: it creates only missing shards and queues the unfinished ones

    class Method(models.TextChoices):
        LHA = "lha", "LHA (documents, then sentences)"
        MUSS = "muss", "MUSS paraphrase mining"

    class Retrieval(models.TextChoices):
        DENSE = "dense", "dense (encoder cosine)"
        HYBRID = "hybrid", "hybrid (character 3-gram TF-IDF + encoder cosine)"

    method = models.CharField(max_length=8, choices=Method.choices)
    retrieval = models.CharField(
        max_length=8, choices=Retrieval.choices, default=Retrieval.DENSE,
        help_text="How neighbours were found and scored; jobs made before hybrid retrieval existed were dense.",
    )  # fmt: skip
    lexical_idf = models.BinaryField(
        null=True, editable=False, help_text="Hybrid: the character 3-gram IDF fitted on what the job searches (its one version)."
    )
    source_corpus = models.ForeignKey("alignment.Corpus", on_delete=models.CASCADE, related_name="mining_jobs_as_source")
    target_corpus = models.ForeignKey("alignment.Corpus", on_delete=models.CASCADE, related_name="mining_jobs_as_target")
    config = models.JSONField(help_text="The method's settings (LHAConfig / MussConfig fields) and the encoder.")
    config_hash = models.CharField(max_length=64, help_text="Same corpora, method and settings: the same job, never a duplicate.")
    search_index = models.JSONField(
        default=dict,
        blank=True,
        help_text="MUSS: the IVF index's settings (cells, nprobe, PCA, sample), or the stored HNSW index's (kind, M, size); "
        "LHA: how its nearest documents are searched (kind documents: backend, index, target documents).",
    )
    cancel_requested = models.BooleanField(default=False)
    shards_total = models.PositiveIntegerField(default=0)
    shards_done = models.PositiveIntegerField(default=0)
    documents_total = models.PositiveIntegerField(default=0)
    documents_done = models.PositiveIntegerField(default=0)
    pairs_found = models.PositiveIntegerField(default=0)
    busy_seconds = models.FloatField(default=0.0, help_text="Summed over shards (workers run in parallel).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]
        constraints = [models.UniqueConstraint(fields=["config_hash"], name="one_mining_job_per_setting")]

    def __str__(self) -> str:
        return f"mining job {self.pk} ({self.method})"

    @property
    def percent(self) -> int:
        return int(100 * self.documents_done / self.documents_total) if self.documents_total else 0

    @property
    def lexical_weight(self) -> float | None:
        """Hybrid: the lexical cosine's share of the fused score (1 - dense_weight); None for a dense job."""
        weight = (self.config or {}).get("dense_weight")
        return None if weight is None else round(1.0 - float(weight), 3)

    @property
    def unit(self) -> str:
        """What ``documents_done`` counts: LHA's source documents; a MUSS job's sequences while its encode shards run,
        then its sequence steps (one in the neighbours phase, one in the pairs phase)."""
        if self.method == self.Method.LHA:
            return "source documents"
        encoding = self.__dict__.get("encoding")  # annotated by selectors.mining_jobs_visible_to; else asked here
        if encoding is None:
            phases = set(self.shards.filter(phase__in=["encode", "neighbours"]).values_list("phase", flat=True).distinct())
            encoding = phases == {"encode"}
        return "sequences encoded (in shards)" if encoding else "sequence steps (neighbours, then pairs)"


class MiningShard(Job):
    """A range [start, end) of the job's work: source documents by position in id order (LHA), or
    sequences by index (MUSS: for a large job first an "encode" phase over documents [document_first, document_last]
    holding sequences [start, end), then a "neighbours" phase, then a "pairs" phase over the same ranges).

    A finished shard is "succeeded" (stored as "done" before the shared job base)."""

    kind = "mining shard"
    resumable = True  # commits after each document / batch with its position; pairs are unique per job

    class Phase(models.TextChoices):
        ENCODE = "encode"
        NEIGHBOURS = "neighbours"
        PAIRS = "pairs"

    job = models.ForeignKey(MiningJob, on_delete=models.CASCADE, related_name="shards")
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.PAIRS)
    index = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    position = models.PositiveIntegerField(help_text="The next source document to mine: start <= position <= end.")
    document_first = models.BigIntegerField(
        null=True, blank=True, help_text="The first document id it mines (LHA) or encodes (MUSS encode shards)."
    )
    document_last = models.BigIntegerField(
        null=True, blank=True, help_text="The last document id it mines (LHA) or encodes (MUSS encode shards)."
    )
    pairs_found = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "phase", "index"], name="one_shard_per_phase_and_index")]

    @property
    def lane_user_id(self) -> int | None:
        """The mining job's owner: a job's shards share their owner's lanes, so one big job cannot take every worker."""
        return MiningJob.objects.filter(pk=self.job_id).values_list("created_by_id", flat=True).first()


class MiningSequence(models.Model):
    """MUSS: one run of adjacent sentences, its vector, and (after the neighbours phase) its k nearest sequences."""

    job = models.ForeignKey(MiningJob, on_delete=models.CASCADE, related_name="sequences")
    index = models.PositiveIntegerField()
    document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    vector = HalfVectorField(help_text="The sequence's unit vector in half precision: the same pairs as float32, half the bytes.")
    lexical = SparseVectorField(null=True, help_text="Hybrid jobs: unit character 3-gram TF-IDF, hashed, <= 1,000 non-zeros.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="one_sequence_per_index")]

    @property
    def neighbours(self) -> list[list] | None:
        """``[[index, score], ...]`` best first (None before the neighbours phase)."""
        try:
            row = self.neighbour_row
        except MiningNeighbours.DoesNotExist:
            return None
        return [[index, score] for index, score in zip(row.ids, row.scores)]


class MiningNeighbours(models.Model):
    """MUSS: one sequence's k nearest sequences, as the neighbours phase found them, written a batch per binary COPY.

    A narrow table of its own: as columns of :class:`MiningSequence` every batch's UPDATE rewrote its 1,000 wide rows
    (vector and text with them) and their index entries, which made the neighbours phase cost more than the whole
    in-memory pipeline at 300,000 sequences (docs/benchmarks.md, "The MUSS job beside the pipeline it persists")."""

    sequence = models.OneToOneField(MiningSequence, primary_key=True, on_delete=models.CASCADE, related_name="neighbour_row")
    ids = ArrayField(models.IntegerField(), help_text="The k nearest sequences' indices, best first, self excluded.")
    scores = ArrayField(models.FloatField(), help_text="Their scores, in the same order (the job's retrieval's).")
    knn_mean = models.FloatField(help_text="Mean score to the k neighbours (the margin's denominator).")


class MiningIndexPart(models.Model):
    """MUSS: one part of a job's faiss HNSW index as faiss writes it, built once by the prepare and read by every
    worker in place of building its own (each worker building it was half its neighbours phase: docs/benchmarks.md,
    "One job on two worker processes"). Parts of at most 32 MB, stored uncompressed; deleted when the job succeeds."""

    job = models.ForeignKey(MiningJob, on_delete=models.CASCADE, related_name="index_parts")
    part = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "part"], name="one_index_part_per_number")]


class MinedPair(models.Model):
    """One mined n:m item between a source and a target document, with the scores the browser filters on."""

    job = models.ForeignKey(MiningJob, on_delete=models.CASCADE, related_name="pairs")
    source_document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="+")
    target_document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="+")
    source_sentences = models.JSONField(help_text="Sentence indices in the source document.")
    target_sentences = models.JSONField(help_text="Sentence indices in the target document.")
    source_key = models.CharField(max_length=200, help_text="The indices joined: part of the uniqueness key.")
    target_key = models.CharField(max_length=200)
    source_text = models.TextField()
    target_text = models.TextField()
    source_count = models.PositiveSmallIntegerField()
    target_count = models.PositiveSmallIntegerField()
    source_tokens = models.PositiveIntegerField()
    target_tokens = models.PositiveIntegerField()
    score = models.FloatField()
    doc_score = models.FloatField(null=True)
    length_ratio = models.FloatField(help_text="Target characters / source characters.")
    overlap = models.FloatField(null=True)
    features = models.JSONField(default=dict)

    class Meta:
        ordering = ["-score", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "source_document", "target_document", "source_key", "target_key"], name="mined_pair_once_per_job"
            )
        ]
        indexes = [
            models.Index(fields=["job", "-score"]),
            GinIndex(SearchVector("source_text", "target_text", config="simple"), name="mined_pair_text_search"),
        ]

    @property
    def shape(self) -> str:
        return f"{self.source_count}:{self.target_count}"

    @property
    def source_numbers(self) -> str:
        return sentence_numbers(self.source_sentences)

    @property
    def target_numbers(self) -> str:
        return sentence_numbers(self.target_sentences)


def sentence_numbers(indices: list[int]) -> str:
    """Stored 0-based sentence indices as every page numbers sentences, from 1: [2] -> "3", [2, 3, 4] -> "3–5", [0, 4] -> "1, 5"."""
    runs: list[list[int]] = []
    for index in sorted(int(i) for i in indices):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(f"{run[0] + 1}–{run[-1] + 1}" if len(run) > 1 else f"{run[0] + 1}" for run in runs)
