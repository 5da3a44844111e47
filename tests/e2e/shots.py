"""Screenshots from the browser tests, so that someone can look at every screen a test drove.

Every shot goes to ``SCREENSHOT_DIR`` (default: ``sentence-aligner-screenshots`` in the temp folder). The
README's images are shots named ``screenshot-*.png``; with ``README_SCREENSHOTS=docs`` they are also written
to ``docs/``, which is how the README's pictures are refreshed::

    README_SCREENSHOTS=docs .venv/bin/python -m pytest tests/e2e -k "annotat or inspection or retraining or mining or curation or review or preview or demo or item_events or run_page or alignment_view or guidelines"
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SHOTS = Path(os.environ.get("SCREENSHOT_DIR") or Path(tempfile.gettempdir()) / "sentence-aligner-screenshots")
README_SHOTS = os.environ.get("README_SCREENSHOTS", "")


def shot(target, name: str, **options) -> Path:
    """Screenshot ``target`` (a Playwright page or locator) as ``name``; README images also to README_SCREENSHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    target.screenshot(path=str(path), **options)
    if README_SHOTS and name.startswith("screenshot-"):
        Path(README_SHOTS).mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(Path(README_SHOTS) / name), **options)
    return path
