"""Signals of the export jobs (webhooks listen to them)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once when an export job's files are complete; keyword ``job`` is the ExportJob.
export_finished = Signal()
