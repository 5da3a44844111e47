"""Browser tests: Playwright drives Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

# Playwright's sync API keeps an event loop running in the test thread; the ORM
# calls the tests make between browser steps are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# A 2-core CI machine running the whole suite answers a request in seconds at worst: expectations wait up to 15 s
# (the default 5 s failed a queue undo there that passes alone); a passing expectation returns as soon as it holds.
expect.set_options(timeout=15_000)

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
