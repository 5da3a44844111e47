"""The sentence-pair label set: the one definition, for the ML and the apps alike.

A (simple sentence, complex sentence) pair is ``aligned`` (same meaning, perhaps simplified),
``partial`` (shared content, one side says more) or ``not_aligned``. The aligner, the
cross-encoder, the gold readers and the annotation app all speak these words. The apps import
them from here, because ``models_ml`` sits at the bottom of the layers and may import no app.
``annotation.labels`` re-exports them with the app's rules (current label, write guard).
"""

from __future__ import annotations

ALIGNED = "aligned"
PARTIAL = "partial"
NOT_ALIGNED = "not_aligned"

LABELS: tuple[str, ...] = (ALIGNED, PARTIAL, NOT_ALIGNED)
# The labels that link two sentences (Task 1 of the papers; Task 2 counts only ALIGNED).
LINKED_LABELS: tuple[str, ...] = (ALIGNED, PARTIAL)
