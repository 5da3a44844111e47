"""Input and output shapes of the annotation endpoints: projects, members, assignments, labels, model versions.

Querysets of the ids a user may name come from the view (the project and the user's
corpora), so an id outside them is a 400 on that field, never a look at someone else's
data. The writes are the services' (``annotation.services``, ``annotation.training.registry``).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import serializers

from alignment.models import AlignmentRun, Corpus, DocumentPair, Sentence
from annotation import labels
from annotation.models import AnnotationProject, Assignment, ItemEvent, LabelEvent, ModelVersion, ProjectMembership
from webapp.api.schema_fields import enum_field

LABELS = [(label, LabelEvent.label_name(label)) for label in labels.LABELS] + [(labels.UNLABELLED, "unlabelled (cleared)")]
WRITABLE_SOURCES = [
    (LabelEvent.Source.HUMAN.value, "an annotator's own label"),
    (LabelEvent.Source.SUGGESTION.value, "an annotator accepted the aligner's suggestion"),
    (LabelEvent.Source.ADJUDICATION.value, "a manager's final label (adjudication)"),
]


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.ChoiceField(choices=ProjectMembership.Role.choices, read_only=True, help_text="Your role in the project.")
    pair_count = serializers.IntegerField(read_only=True)
    active_model_label = serializers.SerializerMethodField(
        help_text='The active model by name: "v2", or with no version active "the shipped default model" or "the hand-calibrated '
        'MiniLM aligner" (the names every page uses).'
    )
    suggestion_model_label = serializers.CharField(
        source="suggestion_run.model_label", read_only=True, allow_null=True, default=None,
        help_text="The model the suggestion run aligned with, by the same names.",
    )  # fmt: skip

    class Meta:
        model = AnnotationProject
        fields = [
            "id", "name", "corpus", "role", "strategy", "overlap", "guidelines", "suggestion_run", "suggestion_model_label",
            "pending_suggestion_run", "active_model", "active_model_label", "test_item_rate", "accuracy_threshold", "adjudicate_all",
            "exclude_flagged", "pair_count", "created_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_active_model_label(self, project: AnnotationProject) -> str:
        from annotation.training.registry import version_name

        return version_name(project, project.active_model)


class ProjectCreateSerializer(serializers.Serializer):
    """The project form's fields; ``corpora`` are the ones the user may build projects on (their own; all for staff)."""

    name = serializers.CharField(max_length=200)
    corpus = serializers.PrimaryKeyRelatedField(queryset=Corpus.objects.none(), help_text="One of your own corpora (any corpus for staff).")
    pairs = serializers.PrimaryKeyRelatedField(
        queryset=DocumentPair.objects.none(), many=True, required=False, help_text="Default: every pair of the corpus."
    )
    suggestion_run = serializers.PrimaryKeyRelatedField(
        queryset=AlignmentRun.objects.none(), required=False, allow_null=True, default=None,
        help_text="A finished run of the corpus whose candidates annotators see as suggestions. Default: the latest one.",
    )  # fmt: skip
    overlap = serializers.IntegerField(min_value=1, max_value=10, default=2, help_text="Annotators per document pair.")
    strategy = serializers.ChoiceField(choices=AnnotationProject.Strategy.choices, default=AnnotationProject.Strategy.DOCUMENTS)
    guidelines = serializers.CharField(required=False, allow_blank=True, default="")

    def __init__(self, *args, corpora=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if corpora is not None:
            self.fields["corpus"].queryset = corpora
            self.fields["pairs"].child_relation.queryset = DocumentPair.objects.filter(corpus__in=corpora)
            self.fields["suggestion_run"].queryset = AlignmentRun.objects.filter(corpus__in=corpora, status=AlignmentRun.Status.SUCCEEDED)

    def validate_name(self, value: str) -> str:
        from annotation.selectors import project_name_refusal

        request = self.context.get("request")
        refusal = project_name_refusal(request.user if request else None, value)  # never confirms a private project
        if refusal:
            raise serializers.ValidationError(refusal)
        return value

    def validate(self, data: dict) -> dict:
        corpus, run = data["corpus"], data.get("suggestion_run")
        if run is not None and run.corpus_id != corpus.pk:
            raise serializers.ValidationError({"suggestion_run": f"run {run.pk} aligned another corpus"})
        foreign = [pair.pk for pair in data.get("pairs", []) if pair.corpus_id != corpus.pk]
        if foreign:
            raise serializers.ValidationError({"pairs": f"document pairs {foreign} do not belong to corpus {corpus.pk}"})
        if "pairs" in data and not data["pairs"]:
            raise serializers.ValidationError({"pairs": "give at least one document pair, or leave the field out for all of them"})
        return data


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.get_username", read_only=True)

    class Meta:
        model = ProjectMembership
        fields = ["id", "username", "role"]
        read_only_fields = fields


class MemberInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=ProjectMembership.Role.choices)

    def validate_username(self, value: str):
        user = get_user_model().objects.filter(username=value).first()
        if user is None:
            raise serializers.ValidationError(f"no user called {value!r}")
        return user


class AssignmentSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="annotator.get_username", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "pair", "annotator", "created_at", "completed_at"]
        read_only_fields = fields


class AssignmentCreateSerializer(serializers.Serializer):
    """One document pair of the project for one member with the annotator role."""

    pair = serializers.PrimaryKeyRelatedField(queryset=DocumentPair.objects.none(), help_text="A document pair of the project.")
    annotator = serializers.CharField(max_length=150, help_text="Username of a member with the annotator role.")

    def __init__(self, *args, project: AnnotationProject | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        if project is not None:
            self.fields["pair"].queryset = project.pairs.all()

    def validate_annotator(self, value: str):
        membership = ProjectMembership.objects.filter(project=self.project, user__username=value).select_related("user").first()
        if membership is None or membership.role != ProjectMembership.Role.ANNOTATOR:
            raise serializers.ValidationError(f"{value!r} is not an annotator of this project; add them as annotator first")
        return membership.user

    def validate(self, data: dict) -> dict:
        if Assignment.objects.filter(project=self.project, pair=data["pair"], annotator=data["annotator"]).exists():
            raise serializers.ValidationError({"annotator": f"{data['annotator']} is already assigned pair {data['pair'].pk}"})
        return data


class DistributeResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(
        allow_null=True,
        help_text="New assignments (pairs already given to `overlap` annotators are left alone); null when a large "
        "project's pairs are given out by a background job.",
    )
    in_background = serializers.BooleanField(
        help_text="A project of more than `ASSIGN_INLINE_MAX_PAIRS` pairs is given out by a background job (answered "
        "202); `distribute/stop/` stops it."
    )


class DistributeStopSerializer(serializers.Serializer):
    stopped = serializers.BooleanField(help_text="Whether a background job was giving the pairs out, or waited to.")
    pairs_assigned = serializers.IntegerField(
        allow_null=True, help_text="The project's pairs with assignments once it stopped (null when nothing was stopped)."
    )


class LabelEventSerializer(serializers.ModelSerializer):
    """One append-only label event; the current label of an item is the ``new_label`` of its latest event."""

    annotator = serializers.CharField(source="annotator.get_username", read_only=True)
    old_label = enum_field("LabelEnum", LABELS, read_only=True)
    new_label = enum_field("LabelEnum", LABELS, read_only=True)
    source = enum_field("LabelSourceEnum", LabelEvent.Source.choices, read_only=True)
    suggestion = serializers.JSONField(
        read_only=True,
        help_text='What was suggesting when the label was made: {"run_id", "model", "model_version", "kind": "stored" | "none" | '
        '"unknown", "basis": "recorded" | "backfilled"}; {} for adjudications and imports.',
    )

    class Meta:
        model = LabelEvent
        fields = [
            "id", "pair", "annotator", "simple_sentence", "complex_sentence", "old_label", "new_label", "source", "previous",
            "undoes", "seconds_spent", "suggestion_run", "suggestion", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class ItemEventSerializer(serializers.ModelSerializer):
    """An annotator's skip, flag, unflag, comment or skip undo; append-only like labels. Sentences are null for the whole pair."""

    annotator = serializers.CharField(source="annotator.get_username", read_only=True)
    kind = enum_field("ItemEventKindEnum", ItemEvent.Kind.choices, read_only=True)

    class Meta:
        model = ItemEvent
        fields = ["id", "pair", "annotator", "kind", "text", "simple_sentence", "complex_sentence", "undoes", "created_at"]
        read_only_fields = fields


class LabelCreateSerializer(serializers.Serializer):
    pair = serializers.PrimaryKeyRelatedField(queryset=DocumentPair.objects.none(), help_text="A document pair of the project.")
    simple_sentence = serializers.IntegerField(min_value=1, help_text="A sentence of the pair's simple document.")
    complex_sentence = serializers.IntegerField(min_value=1, help_text="A sentence of the pair's complex document.")
    label = enum_field("LabelEnum", LABELS, help_text="An empty label clears the item (not for adjudication).")
    source = enum_field("WritableLabelSourceEnum", WRITABLE_SOURCES, default=LabelEvent.Source.HUMAN.value)
    expected_previous = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="Id of the event you last saw for this item (yours; for adjudication the latest adjudication), null when none. "
        "A stale value is refused with 409 and the current event.",
    )  # fmt: skip
    seconds_spent = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)

    def __init__(self, *args, project: AnnotationProject | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if project is not None:
            self.fields["pair"].queryset = project.pairs.all()

    def validate(self, data: dict) -> dict:
        pair = data["pair"]
        documents = dict(
            Sentence.objects.filter(pk__in=[data["simple_sentence"], data["complex_sentence"]]).values_list("pk", "document_id")
        )
        errors = {}
        if documents.get(data["simple_sentence"]) != pair.simple_document_id:
            errors["simple_sentence"] = f"sentence {data['simple_sentence']} is not a sentence of the simple document of pair {pair.pk}"
        if documents.get(data["complex_sentence"]) != pair.complex_document_id:
            errors["complex_sentence"] = f"sentence {data['complex_sentence']} is not a sentence of the complex document of pair {pair.pk}"
        if data["source"] == LabelEvent.Source.ADJUDICATION and not data["label"]:
            errors["label"] = labels.FINAL_LABEL_NEEDED
        if errors:
            raise serializers.ValidationError(errors)
        return data


class LabelUpdateSerializer(serializers.Serializer):
    label = enum_field("LabelEnum", LABELS, help_text="An empty label clears the item (not for adjudication).")
    seconds_spent = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)


class LabelConflictSerializer(serializers.Serializer):
    error = serializers.CharField()
    current = LabelEventSerializer(allow_null=True, help_text="The item's latest event now (null when it has none).")


class ModelVersionSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="__str__", read_only=True)
    active = serializers.SerializerMethodField(help_text="Whether this is the project's active model.")
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ModelVersion
        fields = [
            "id",
            "name",
            "number",
            "active",
            "snapshot",
            "config",
            "training",
            "checksum",
            "metrics",
            "baseline",
            "automatic",
            "automatic_reason",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    def get_active(self, version: ModelVersion) -> bool:
        return version.pk == self.context["project"].active_model_id


class PromoteSerializer(serializers.Serializer):
    force = serializers.BooleanField(default=False, help_text="Promote even though it does not beat the active model.")
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="", help_text="Needed when forcing.")


class ActivationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.CharField()
    version = serializers.IntegerField(source="version_id", allow_null=True)
    previous = serializers.IntegerField(source="previous_id", allow_null=True)
    model_label = serializers.SerializerMethodField(help_text="The model active after this change, by name (as ProjectSerializer).")
    previous_model_label = serializers.SerializerMethodField(help_text="The model active before it, by name.")
    reason = serializers.CharField()
    alignment_run = serializers.IntegerField(source="alignment_run_id", allow_null=True, help_text="The re-alignment it queued.")

    def get_model_label(self, activation) -> str:
        from annotation.training.registry import version_name

        return version_name(activation.project, activation.version)

    def get_previous_model_label(self, activation) -> str:
        from annotation.training.registry import version_name

        return version_name(activation.project, activation.previous)
