"""The app's system checks (``manage.py check``, and so every start), registered by ``AlignmentConfig.ready``.

Kept apart from the code they check: every Django process runs ``ready``, and importing the mining search chain for
one setting's check cost each of them about 0.35 s (scipy's sparse matrices, the search backends).
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register()
def faiss_installed_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """``MINING_SEARCH_BACKEND=faiss`` without faiss-cpu fails ``manage.py check`` (and so the start), not a job later."""
    if settings.MINING_SEARCH_BACKEND != "faiss":
        return []
    from models_ml.mining.vector_index import faiss_available

    if faiss_available():
        return []
    return [
        checks.Error(
            "MINING_SEARCH_BACKEND=faiss but faiss-cpu is not installed",
            hint="install it (.venv/bin/pip install faiss-cpu) or unset MINING_SEARCH_BACKEND to search with pgvector",
            id="alignment.E001",
        )
    ]
