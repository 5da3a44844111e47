"""Import jobs: an upload from the Import page, imported by a worker instead of inside the web request.

A 5 MB file at the size limit takes a minute or more to split into sentences, longer than a
web request may last. The page stores the uploaded files in the database (a worker may run on
another machine, so never on the web server's disk), queues an :class:`ImportJob` and shows its
card. The task imports the staged files with the same workflow as ``manage.py import_corpus``
and deletes them when it finishes, successfully or not.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from alignment.jobs.models import Job


class ImportJob(Job):
    """One upload to import into a corpus, the per-file results so far and what was queued afterwards.

    Resumable: a requeued task skips the files whose results it already recorded and imports the
    rest again; an import is idempotent per content hash, so a file stored by the dead attempt
    just before the kill is counted "unchanged", never stored twice.
    """

    kind = "import"
    resumable = True

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    corpus_name = models.CharField(max_length=200)
    language = models.CharField(max_length=16)
    pairing = models.CharField(max_length=16)
    options = models.JSONField(help_text="ImportOptions fields: format, paragraph_mode, filename_pattern, drop_level_header, ...")
    corpus = models.ForeignKey(
        "alignment.Corpus", null=True, blank=True, on_delete=models.SET_NULL, related_name="import_jobs",
        help_text="The corpus the files went into; empty until the job finds or creates it, or when a new one got nothing.",
    )  # fmt: skip
    corpus_created = models.BooleanField(default=False, help_text="The corpus was created by this job.")
    corpus_removed = models.BooleanField(default=False, help_text="The new corpus got no document and was removed again.")
    cancel_requested = models.BooleanField(default=False, help_text="Asked to stop: no file after the one in flight is imported.")
    files_total = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=list, help_text="One FileImportResult (as a dict) per file done, in upload order.")
    pairs_created = models.PositiveIntegerField(default=0)
    direction = models.JSONField(default=list, blank=True, help_text="The level order the pairs follow and why, one note per line.")
    language_note = models.TextField(blank=True, help_text="For a corpus whose language was detected: what was found, and how surely.")
    embedding_run = models.ForeignKey("alignment.EmbeddingRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    alignment_run = models.ForeignKey("alignment.AlignmentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"import job {self.pk} into {self.corpus_name!r} ({self.status})"

    @property
    def files_done(self) -> int:
        return len(self.results)

    @property
    def percent(self) -> int:
        if not self.files_total:
            return 100 if self.status == self.Status.SUCCEEDED else 0
        return min(100, round(100 * self.files_done / self.files_total))

    @property
    def report(self):
        """The :class:`ImportReport` of the files done so far (complete once the job succeeded)."""
        from alignment.importing.service import FileImportResult, ImportReport  # the service imports alignment.models

        return ImportReport(
            files=[FileImportResult(**result) for result in self.results],
            pairs_created=self.pairs_created,
            direction=self.direction,
            language_note=self.language_note,
        )


class ImportJobFile(models.Model):
    """One uploaded file, staged in the database until its job finishes (then deleted)."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="staged_files")
    index = models.PositiveIntegerField(help_text="Position in the upload: files are imported in this order.")
    name = models.CharField(max_length=500)
    content = models.BinaryField()

    class Meta:
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="one_staged_file_per_position")]

    def __str__(self) -> str:
        return f"{self.name} (import job {self.job_id})"
