"""Signals other apps listen to, so alignment never imports them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``run`` (an AlignmentRun) after a run stored its last pair and was marked succeeded.
run_succeeded = Signal()
# Sent with ``run`` whenever a run stops working: succeeded, failed or cancelled (``run.status`` says which).
run_finished = Signal()
