"""Export jobs: one request to write a project's gold dataset to files, and what came of it.

A job is created with validated options (formats, splits, filters) and runs in the
background. It writes into a hidden staging folder and renames it into place only when
every file is complete, so a failed job leaves no files behind. ``files`` lists what a
succeeded job wrote, with sizes and SHA-256 hashes: two jobs over the same project state
and options list the same hashes (exports are reproducible byte for byte).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models

from alignment.jobs.models import Job


def export_root() -> Path:
    """The folder all export jobs write under (settings.EXPORT_DIR, read at call time so tests can move it)."""
    return Path(getattr(settings, "EXPORT_DIR", Path(settings.STATE_DIR) / "exports"))


class ExportJob(Job):
    """Writes into a staging folder. Not resumable: a requeue after a dead worker restarts from scratch."""

    kind = "export"
    resumable = False

    project = models.ForeignKey("annotation.AnnotationProject", on_delete=models.CASCADE, related_name="export_jobs")
    options = models.JSONField(help_text="Validated options: formats, include_majority, seed, fractions, simplification filters.")
    pairs_total = models.PositiveIntegerField(default=0, help_text="Document pairs that may hold gold.")
    pairs_done = models.PositiveIntegerField(default=0)
    items_written = models.PositiveIntegerField(default=0, help_text="Labelled sentence pairs written so far.")
    files = models.JSONField(default=list, help_text='[{"name": relative path, "bytes": n, "sha256": hex}, ...] once succeeded.')
    split_pairs = models.JSONField(default=dict, blank=True, help_text='Document pairs per split once succeeded: {"train": n, ...}.')
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"export job {self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if not self.pairs_total:
            return 100 if self.status == self.Status.SUCCEEDED else 0
        return min(100, round(100 * self.pairs_done / self.pairs_total))

    @property
    def directory(self) -> Path:
        """Where a succeeded job's files are."""
        return export_root() / f"project-{self.project_id}" / f"job-{self.pk}"

    @property
    def empty_splits(self) -> list[str]:
        """Splits the options gave a share but no document pair fell in (a small project's train, say), in split order."""
        if self.status != self.Status.SUCCEEDED or not self.split_pairs:
            return []
        return empty_splits(self.options.get("fractions") or {}, self.split_pairs)

    def file_path(self, name: str) -> Path | None:
        """The path of one of the job's listed files; None for a name it did not write (no path tricks)."""
        if self.status != self.Status.SUCCEEDED or name not in {entry["name"] for entry in self.files}:
            return None
        return self.directory / name


def empty_splits(fractions: dict[str, float], pairs: dict[str, int]) -> list[str]:
    """The splits with a share above 0 but no document pair, in ``fractions``' order."""
    return [split for split, share in fractions.items() if share > 0 and not pairs.get(split)]
