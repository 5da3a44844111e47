"""Browser tests: Playwright drives Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Playwright's sync API keeps an event loop running in the test thread; the ORM
# calls the tests make between browser steps are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does) or set CHROMIUM_PATH")
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }
