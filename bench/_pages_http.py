"""The pages of tests/test_page_scale.py timed with a real HTTP client against gunicorn as ``scripts/run.sh`` starts it
(DEBUG off): shared by bench/corpus_scale.py and ``bench/page_scale.py --http``."""

from __future__ import annotations

import statistics
import tempfile
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path


def pages_over_http(world, passwords: Callable[[str], str], requests: int, *, wanted: set[str] = frozenset(), before_each=None) -> None:
    """``requests`` GETs of each page as its persona, after a warm-up GET; prints p50 / p95 / max ms per page.

    ``passwords(persona)`` gives the persona's password; ``before_each()``, when given, runs before every timed GET (the
    bench's label change).
    """
    from annotation_load import Client, _free_port, _percentile, _start_server, _stop_server
    from django.core.management import call_command

    from tests.test_page_scale import PAGES

    pages = [page for page in PAGES if not wanted or page.name in wanted]
    call_command("collectstatic", interactive=False, verbosity=0)
    port = _free_port()
    log = Path(tempfile.mkdtemp(prefix="pages-http-")) / "gunicorn.log"
    server = _start_server("gunicorn", port, str(log))
    try:
        clients = {}
        for persona in {page.persona for page in pages}:
            clients[persona] = Client(f"http://127.0.0.1:{port}")
            clients[persona].login(getattr(world, persona).username, passwords(persona))
        print(f"\n{'page':<28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}   ({requests} GETs each, gunicorn, real HTTP)")
        for page in pages:
            client, url = clients[page.persona], page.url(world)
            try:
                client.opener.open(f"{client.base}{url}", timeout=120).read()  # warm-up
            except urllib.error.HTTPError as error:
                print(f"{page.name:<28} answered {error.code}; the server's log: {log}", flush=True)
                continue
            times = []
            for _ in range(requests):
                if before_each is not None:
                    before_each()
                began = time.perf_counter()
                with client.opener.open(f"{client.base}{url}", timeout=120) as response:
                    response.read()
                times.append(1000 * (time.perf_counter() - began))
            flag = "" if _percentile(times, 0.95) <= 300 else "  over 300 ms"
            print(f"{page.name:<28} {statistics.median(times):>8.0f} {_percentile(times, 0.95):>8.0f} {max(times):>8.0f}{flag}", flush=True)
    finally:
        _stop_server(server, "gunicorn")
