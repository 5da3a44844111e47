"""The history of a document's segmentation: each sentence split, merge and undo made on screen.

A document's text (``raw_text``) never changes; its sentences are spans into it. An edit retires the
sentences it replaces (their rows stay, with ``retired_by`` naming the edit, because labels name them)
and adds the sentences that replace them, and the document's current sentences are numbered again in
text order. Undoing an edit is an edit too: it retires what the edit added and brings back what it
retired, so the history only grows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SegmentEdit(models.Model):
    """One change of one document's segmentation. ``before``/``after``: the sentence ids it retired and added."""

    class Kind(models.TextChoices):
        SPLIT = "split", "sentence split"
        MERGE = "merge", "sentences merged"
        UNDO = "undo", "edit undone"

    document = models.ForeignKey("alignment.Document", on_delete=models.CASCADE, related_name="segment_edits")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    before = models.JSONField(default=list, help_text="The sentences it retired (ids), in text order.")
    after = models.JSONField(default=list, help_text="The sentences that replaced them (ids), in text order.")
    position = models.PositiveIntegerField(help_text="0-based index of the first sentence it touched, as the document was numbered then.")
    offset = models.PositiveIntegerField(null=True, blank=True, help_text="A split's point: characters into the sentence's text.")
    undoes = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    where = models.CharField(max_length=300, blank=True, help_text="Where it was made, e.g. the project and pair of the screen.")
    report = models.JSONField(default=dict, blank=True, help_text="What followed: labels carried and dropped, re-decoding runs.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "pk"]
        indexes = [models.Index(fields=["document", "-id"], name="segment_edit_latest")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} in {self.document_id} at sentence {self.position + 1}"

    @property
    def undone(self) -> bool:
        return hasattr(self, "undone_by")
