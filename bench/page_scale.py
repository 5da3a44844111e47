"""Time and queries of every page with many document pairs in one corpus and one project (issue 34).

    .venv/bin/python bench/page_scale.py [--pairs 10000] [--requests 20] [--pages "my tasks,agreement"]
                                         [--sentences 3] [--links 1] [--cold | --after-label] [--http] [--vectors 384]

Builds, in a throw-away embedded database, the world of tests/page_scale_world.py with ``--pairs`` document pairs
(three sentences a side, one alignment run over every pair, one project with two annotators who labelled every pair;
``--sentences 28 --links 3`` gives the shape of bench/corpus_scale.py's OneStopEnglish pairs: 28 sentences a side, 3
candidates and so about 83 labels per simple document and annotator),
and ANALYZEs it (as autovacuum would), then sends ``--requests`` GETs of each page of tests/test_page_scale.py as the role that uses it, through Django's
test client (the whole server-side stack: middleware, sessions, views, templates, PostgreSQL; no network), after one
warm-up GET. Prints per page p50 / p95 / max milliseconds, the SQL queries of one request and the bytes of the page.
Issue 34's bar: p95 <= 300 ms on every page at 10,000 pairs, and queries that do not grow with the pairs. The project
page, the agreement dashboard and the Models page keep their project-wide figures in the cache until the project's labels
change; ``--cold`` empties it before every GET, so each is timed as if never counted before (the queries column is
always the cold count); ``--after-label`` has ben change a label before every GET, as while annotators work (figures
slower than PROJECT_FIGURES_INLINE_MS are then shown as they were, with their age, and counted again in the background).
``--http`` sends the GETs with a real HTTP client to gunicorn as ``scripts/run.sh`` starts it (DEBUG off), as
bench/corpus_scale.py's page stage does, instead of the test client (no query counts then). ``--vectors 384`` also stores a
random vector for every sentence, as an embedding job would: the corpus page counts a corpus's vectors, which a
world built without them never showed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _django import setup_django

os.environ.setdefault("DEBUG", "0")  # DEBUG keeps a log of every SQL query; production does not
os.environ.setdefault("STATIC_MANIFEST", "0")  # nothing is collected here: static URLs without the manifest's hashes
setup_django()

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.test import Client

from tests.page_scale_world import world_build
from tests.test_page_scale import PAGES


def _counter(queries: list[str]):
    """An execute wrapper that lists the SQL it sees."""

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    return count


def _relabel(world) -> None:
    """Ben changes his label of the first pair's first link (partial <-> aligned) through the label service."""
    from annotation import labels, services

    pair = world.first_pair
    simple = pair.simple_document.sentences.order_by("index").first()
    complex_ = pair.complex_document.sentences.order_by("index").first()
    latest = labels.latest_event(world.project, world.ben, simple.pk, complex_.pk)
    services.label_record(
        project=world.project, annotator=world.ben, pair=pair, simple_sentence_id=simple.pk, complex_sentence_id=complex_.pk,
        label="aligned" if latest is not None and latest.new_label == "partial" else "partial",
        expected_previous=latest.pk if latest is not None else None,
    )  # fmt: skip


def _vectors(world, dimensions: int) -> None:
    """A random vector of ``dimensions`` floats for every sentence of the world's corpus, as an embedding job leaves
    them (the corpus page counts them; the world alone has none), written by one INSERT."""
    from alignment.models import Document, Encoder, Sentence, SentenceEmbedding

    encoder = Encoder.objects.create(name="page-scale-encoder", dimensions=dimensions)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {SentenceEmbedding._meta.db_table} (sentence_id, encoder_id, vector, created_at) "
            f"SELECT s.id, %s, (SELECT array_agg(random()) FROM generate_series(1, %s) WHERE s.id IS NOT NULL)::vector, now() "
            f"FROM {Sentence._meta.db_table} s JOIN {Document._meta.db_table} d ON d.id = s.document_id WHERE d.corpus_id = %s",
            [encoder.pk, dimensions, world.corpus.pk],
        )
        cursor.execute(f"SELECT count(DISTINCT vector::text) FROM (SELECT vector FROM {SentenceEmbedding._meta.db_table} LIMIT 1000) v")
        distinct = cursor.fetchone()[0]
    print(
        f"{SentenceEmbedding.objects.filter(encoder=encoder).count():,} vectors of {dimensions} floats stored ({distinct} distinct of the first 1,000)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20, help="timed GETs per page")
    parser.add_argument("--pages", default="", help="comma-separated page names (default: every page)")
    parser.add_argument("--sentences", type=int, default=3, help="sentences a side of each pair")
    parser.add_argument("--links", type=int, default=1, help="candidates (and labels) per simple sentence")
    moment = parser.add_mutually_exclusive_group()
    moment.add_argument("--cold", action="store_true", help="empty the cache before every GET: figures never counted before")
    moment.add_argument("--after-label", action="store_true", help="ben changes a label before every GET, as annotators at work do")
    parser.add_argument("--http", action="store_true", help="GETs with a real HTTP client against gunicorn (DEBUG off) instead")
    parser.add_argument("--vectors", type=int, default=0, metavar="D", help="store a random D-float vector for every sentence too")
    args = parser.parse_args()
    if args.http and args.cold:
        parser.error("--cold empties this process's cache, not the server's: not with --http")
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    wanted = {name.strip() for name in args.pages.split(",") if name.strip()}
    started = time.perf_counter()
    world = world_build(args.pairs, sentences=args.sentences, links=args.links)
    if args.vectors:
        _vectors(world, args.vectors)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the statistics autovacuum keeps in a running database, which the planner's choices need
    cold = ", the cache emptied before each" if args.cold else ", a label changed before each" if args.after_label else ""
    print(f"{args.pairs:,} document pairs built in {time.perf_counter() - started:.1f} s; {args.requests} GETs per page{cold}\n")
    if args.http:
        from _pages_http import pages_over_http

        before_each = (lambda: _relabel(world)) if args.after_label else None
        pages_over_http(
            world, lambda persona: f"{getattr(world, persona).username}-pass-123", args.requests, wanted=wanted, before_each=before_each
        )
        return
    print(f"{'page':<28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'queries':>8} {'bytes':>9}")
    for page in PAGES:
        if wanted and page.name not in wanted:
            continue
        client = Client()
        client.force_login(getattr(world, page.persona))
        url = page.url(world)
        response = client.get(url)  # warm-up: session, template loading
        assert response.status_code == 200, (url, response.status_code)
        queries: list[str] = []
        caches["figures"].clear()  # counted cold: what the page asks right after a label
        with connection.execute_wrapper(_counter(queries)):  # survives the reconnect each request does (CONN_MAX_AGE)
            size = len(client.get(url).content)
        times = []
        for _ in range(args.requests):
            if args.cold:
                caches["figures"].clear()
            if args.after_label:
                _relabel(world)
            tick = time.perf_counter()
            client.get(url)
            times.append(1000 * (time.perf_counter() - tick))
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"{page.name:<28} {statistics.median(times):>8.0f} {p95:>8.0f} {times[-1]:>8.0f} {len(queries):>8} {size:>9,}", flush=True)


if __name__ == "__main__":
    main()
