"""Annotation projects, who plays which role in them, assignments, and the append-only label history.

The current label of a sentence pair for an annotator is never stored: it is the
``new_label`` of that annotator's latest :class:`LabelEvent` for the pair. Changing a
label, undoing, accepting a suggestion and adjudicating all append events, so the
history can always be replayed and nothing a person did is lost.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from alignment.models import AlignmentRun, Corpus, DocumentPair, Sentence
from models_ml import labels


class AnnotationProject(models.Model):
    """A corpus, or some of its document pairs, to be labelled by a team."""

    class Strategy(models.TextChoices):
        DOCUMENTS = "documents", "whole document pairs"
        QUEUE = "queue", "pair queue"

    name = models.CharField(max_length=200, unique=True)
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="annotation_projects")
    pairs = models.ManyToManyField(DocumentPair, related_name="annotation_projects")
    guidelines = models.TextField(blank=True, help_text="Shown to annotators; Markdown-free plain text with examples.")
    overlap = models.PositiveSmallIntegerField(default=2, help_text="Annotators per item.")
    strategy = models.CharField(max_length=16, choices=Strategy.choices, default=Strategy.DOCUMENTS)
    suggestion_run = models.ForeignKey(
        AlignmentRun,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="annotation_projects",
        help_text="The alignment run whose candidates are shown as suggestions.",
    )
    test_item_rate = models.FloatField(default=0.2, help_text="Share of gold test items mixed into queues (the paper: 1 in 5).")
    accuracy_threshold = models.FloatField(default=0.85, help_text="Annotators below this accuracy on test items are flagged.")
    adjudicate_all = models.BooleanField(default=False, help_text="Adjudicate every item, not only disagreements.")
    bulk_precision_target = models.FloatField(
        default=0.97, help_text="Bulk accept offers the suggestions whose estimated precision meets this (annotation.labelling.bulk)."
    )
    exclude_flagged = models.BooleanField(
        default=True, help_text="Leave annotators flagged by quality control out of adjudication and agreement-based acceptance."
    )
    active_model = models.ForeignKey(
        "annotation.ModelVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The trained aligner whose suggestions annotators see; empty: the untrained aligner.",
    )  # fmt: skip
    pending_suggestion_run = models.ForeignKey(
        AlignmentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The re-alignment after a promotion; it becomes suggestion_run when it succeeds.",
    )  # fmt: skip
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ProjectMembership(models.Model):
    """A user's role in one project; without one, the project does not exist for them (404)."""

    class Role(models.TextChoices):
        MANAGER = "manager"
        ANNOTATOR = "annotator"
        VIEWER = "viewer"

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_unique_per_project")]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.project}"


class Assignment(models.Model):
    """One document pair given to one annotator in one project."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="assignments")
    pair = models.ForeignKey(DocumentPair, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Figures kept from the assignment's rows, recounted by every write to them (annotation.labels.assignments_recount);
    # the rows stay the truth.
    labelled = models.PositiveIntegerField(default=0, help_text="Simple sentences of the pair with a current label of the annotator.")
    labelled_ever = models.PositiveIntegerField(default=0, help_text="Sentence pairs the annotator ever labelled, an undone label too.")
    queue_run_id = models.IntegerField(null=True, blank=True, help_text="The suggestion run the queue figures below were counted for.")
    queue_open = models.PositiveIntegerField(default=0, help_text="Suggestions of the pair the annotator has not labelled or skipped.")
    queue_uncertainty = models.FloatField(null=True, blank=True, help_text="The least |CRF marginal - 0.5| among them.")
    queue_uncertainty_first = models.IntegerField(null=True, blank=True, help_text="The first of them in the queue's uncertainty order.")
    queue_disagreement = models.FloatField(null=True, blank=True, help_text="The largest disagreement of the measures among them.")
    queue_disagreement_first = models.IntegerField(null=True, blank=True, help_text="The first of them in the disagreement order.")

    class Meta:
        ordering = ["project", "pair", "annotator"]
        constraints = [models.UniqueConstraint(fields=["project", "pair", "annotator"], name="assignment_unique")]
        indexes = [  # the queue's next pair in each order, among the annotator's pairs with suggestions left
            models.Index(
                "project", "annotator", "queue_uncertainty", "queue_uncertainty_first",
                name="assignment_queue_uncertainty", condition=models.Q(queue_open__gt=0),
            ),
            models.Index(
                "project", "annotator", models.F("queue_disagreement").desc(), "queue_disagreement_first",
                name="assignment_queue_disagreement", condition=models.Q(queue_open__gt=0),
            ),
        ]  # fmt: skip


# Time on an item is a client's measurement: empty, or 0 to 24 h. In PostgreSQL NaN sorts above every
# number and infinity is above 24 h, so this also keeps out the NaN that broke every label listing.
SECONDS_SPENT_SANE = models.Q(seconds_spent__isnull=True) | models.Q(seconds_spent__gte=0, seconds_spent__lte=24 * 60 * 60)
CLIENT_ACTION_ID_MAX = 64
CLIENT_ACTION_HELP = "The annotation screen's id for the action that stored this event: its resend is answered, not stored again."


class LabelEvent(models.Model):
    """One change of one annotator's label for one sentence pair. Rows are only ever inserted.

    ``previous`` is the event this one replaces in the annotator's history of the pair
    (None for the first); a write that names a stale ``previous`` is a concurrent edit
    (two tabs) and is refused, so the later write never silently overwrites the earlier.
    ``undoes`` marks an undo: it restores the label before the undone event.

    The history is a chain per item: an annotator's own events on one sentence pair, or the
    adjudications of one sentence pair (every reviewer's together). Each event names the one it
    replaces, so a chain has one first event (``previous`` empty) and no event replaced twice.
    The one-to-one ``previous`` guards the second; the partial unique constraints below guard
    the first, which a plain unique constraint would not (NULLs are distinct), so two
    simultaneous first labels can never both be stored.

    ``client_action_id`` is the annotation screen's id for the action that stored the event (see
    :mod:`annotation.client_actions`): the screen sends an action again when it never heard the
    answer, and one event per annotator and id means the resend is answered, not stored twice.

    ``suggestion_run`` and ``suggestion`` say which alignment run (and model) was suggesting when the
    label was made, so an export cites the suggestions the annotator saw, not a later run's
    (:mod:`annotation.provenance`; events from before it was recorded carry a backfilled guess).
    """

    CHAIN_CONSTRAINTS = ("label_event_one_first_per_annotator_item", "label_event_one_first_adjudication_per_item")

    class Label(models.TextChoices):  # the label set of models_ml.labels, and "" for an undone label
        ALIGNED = labels.ALIGNED
        PARTIAL = labels.PARTIAL
        NOT_ALIGNED = labels.NOT_ALIGNED, "not aligned"
        NONE = "", "unlabelled"

    class Source(models.TextChoices):
        HUMAN = "human"
        SUGGESTION = "suggestion", "suggestion accepted"
        BULK = "bulk", "bulk accepted"
        ADJUDICATION = "adjudication"
        IMPORT = "import"
        UNDO = "undo"
        SEGMENTATION = "segmentation", "sentence edit"  # clears a label whose sentence an edit split or merged (labelling/segmentation.py)

    project = models.ForeignKey(AnnotationProject, on_delete=models.PROTECT, related_name="label_events")
    pair = models.ForeignKey(DocumentPair, on_delete=models.PROTECT, related_name="label_events")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="label_events")
    simple_sentence = models.ForeignKey(Sentence, on_delete=models.PROTECT, related_name="label_events_as_simple")
    complex_sentence = models.ForeignKey(Sentence, on_delete=models.PROTECT, related_name="label_events_as_complex")
    old_label = models.CharField(max_length=16, choices=Label.choices, blank=True)
    new_label = models.CharField(max_length=16, choices=Label.choices, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.HUMAN)
    previous = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_event")
    undoes = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by")
    seconds_spent = models.FloatField(null=True, blank=True, help_text="Time on the item before this action, from the client.")
    client_action_id = models.CharField(max_length=CLIENT_ACTION_ID_MAX, blank=True, default="", help_text=CLIENT_ACTION_HELP)
    suggestion_run = models.ForeignKey(
        AlignmentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The run whose suggestions were shown when the label was made (annotation.provenance).",
    )  # fmt: skip
    suggestion = models.JSONField(
        default=dict, blank=True, help_text='What was suggesting: {"run_id", "model", "model_version", "kind", "basis"}; {} for imports.'
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        indexes = [
            models.Index(fields=["project", "annotator", "pair"]),
            models.Index(fields=["project", "pair", "simple_sentence", "complex_sentence"]),
            models.Index(fields=["project", "id"], name="label_event_project_latest"),  # the project's state: its latest event
            models.Index(  # a project's adjudications, a few among its annotators' events: review, My tasks, exports
                fields=["project", "pair"], condition=models.Q(source="adjudication"), name="label_event_adjudications"
            ),
            models.Index(  # a project's bulk accepts, for reviewers to spot-check (annotation.labelling.bulk)
                fields=["project", "pair"], condition=models.Q(source="bulk"), name="label_event_bulk"
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "client_action_id"], condition=~models.Q(client_action_id=""), name="label_event_one_per_client_action"
            ),
            models.UniqueConstraint(
                fields=["project", "annotator", "simple_sentence", "complex_sentence"],
                condition=models.Q(previous__isnull=True) & ~models.Q(source="adjudication"),
                name="label_event_one_first_per_annotator_item",
            ),
            models.UniqueConstraint(
                fields=["project", "simple_sentence", "complex_sentence"],
                condition=models.Q(previous__isnull=True, source="adjudication"),
                name="label_event_one_first_adjudication_per_item",
            ),
            models.CheckConstraint(condition=SECONDS_SPENT_SANE, name="label_event_seconds_spent_sane"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator}: {self.simple_sentence_id}~{self.complex_sentence_id} {self.old_label or '-'} → {self.new_label or '-'}"

    def save(self, *args, **kwargs) -> None:
        """Insert the event; an annotator's own event (not an adjudication or import) records what was suggesting
        when it is appended, whichever service appends it, unless the caller set ``suggestion`` itself."""
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValidationError("label events are append-only: record a new event instead of changing one")
        if not self.suggestion and self.source in (self.Source.HUMAN, self.Source.SUGGESTION, self.Source.BULK, self.Source.UNDO):
            from annotation.provenance import suggestion_provenance

            provenance = suggestion_provenance(self.project, self.pair)
            self.suggestion_run, self.suggestion = provenance["suggestion_run"], provenance["suggestion"]
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("label events are append-only and are never deleted")

    @classmethod
    def label_name(cls, value: str) -> str:
        """A stored label as people read it: ``not_aligned`` -> "not aligned", ``""`` -> "unlabelled"."""
        try:
            return str(cls.Label(value).label).lower()
        except ValueError:
            return value


ITEM_COMMENT_MAX_CHARS = 2000


class ItemEvent(models.Model):
    """An annotator's skip, flag or comment on an item, stored like labels: rows are only ever inserted.

    The item is a document pair on the annotation screen, or one sentence pair of it in queue
    mode (``simple_sentence`` and ``complex_sentence`` set). Whether an item is flagged is the
    latest flag/unflag event's kind; a skip counts until an ``undo`` event names it in ``undoes``.
    Keeping them as events, not columns, means a manager can always see who skipped or flagged
    what and when, and an undo never erases what happened.
    """

    class Kind(models.TextChoices):
        SKIP = "skip"
        FLAG = "flag"
        UNFLAG = "unflag", "flag removed"
        COMMENT = "comment"
        UNDO = "undo", "skip undone"

    project = models.ForeignKey(AnnotationProject, on_delete=models.PROTECT, related_name="item_events")
    pair = models.ForeignKey(DocumentPair, on_delete=models.PROTECT, related_name="item_events")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="item_events")
    simple_sentence = models.ForeignKey(Sentence, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    complex_sentence = models.ForeignKey(Sentence, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.CharField(max_length=ITEM_COMMENT_MAX_CHARS, blank=True, help_text="The comment of a comment event.")
    undoes = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by")
    client_action_id = models.CharField(max_length=CLIENT_ACTION_ID_MAX, blank=True, default="", help_text=CLIENT_ACTION_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["project", "annotator", "pair"])]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "client_action_id"], condition=~models.Q(client_action_id=""), name="item_event_one_per_client_action"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator}: {self.kind} on pair {self.pair_id}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValidationError("item events are append-only: record a new event instead of changing one")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("item events are append-only and are never deleted")


class PairVerification(models.Model):
    """A manager marking a document pair verified (the paper's step 3), or withdrawing it. Append-only.

    The latest row per (project, pair) says whether the pair is verified; verified pairs
    are the gold set that training and export use.
    """

    project = models.ForeignKey(AnnotationProject, on_delete=models.PROTECT, related_name="verifications")
    pair = models.ForeignKey(DocumentPair, on_delete=models.PROTECT, related_name="verifications")
    verified = models.BooleanField()
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["project", "pair"])]

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValidationError("verifications are append-only: record a new one")
        super().save(*args, **kwargs)


class GoldItem(models.Model):
    """A sentence pair with a known label, mixed into annotators' queues to measure their accuracy."""

    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="gold_items")
    simple_sentence = models.ForeignKey(Sentence, on_delete=models.PROTECT, related_name="+")
    complex_sentence = models.ForeignKey(Sentence, on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=16, choices=LabelEvent.Label.choices[:3])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        constraints = [models.UniqueConstraint(fields=["project", "simple_sentence", "complex_sentence"], name="gold_item_unique")]


class GoldAnswer(models.Model):
    """An annotator's answer to a gold test item (append-only; an empty label retracts the previous answer)."""

    gold_item = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gold_answers")
    label = models.CharField(max_length=16, choices=LabelEvent.Label.choices, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        constraints = [models.CheckConstraint(condition=SECONDS_SPENT_SANE, name="gold_answer_seconds_spent_sane")]


class ParagraphCorrection(models.Model):
    """An annotator's paragraph alignment of a document pair (step 1 of the paper's procedure). Append-only.

    ``groups`` is a list of ``[complex paragraph positions, simple paragraph positions]``,
    positions counted among the paragraphs that have sentences, as the aligner counts
    them. The latest row per (project, pair, annotator) replaces the aligner's paragraph
    alignment on that annotator's screen.
    """

    project = models.ForeignKey(AnnotationProject, on_delete=models.PROTECT, related_name="paragraph_corrections")
    pair = models.ForeignKey(DocumentPair, on_delete=models.PROTECT, related_name="paragraph_corrections")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="paragraph_corrections")
    groups = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["project", "pair", "annotator"])]

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValidationError("paragraph corrections are append-only: record a new one")
        super().save(*args, **kwargs)


# Exports and retraining live in their own modules; importing them here registers their models with this app.
from annotation.export.models import ExportJob  # noqa: E402, F401 - registers these models with this app
from annotation.training.models import AdaptationJob, ModelActivation, ModelVersion, TrainingJob, TrainingSnapshot  # noqa: E402, F401 - as above
