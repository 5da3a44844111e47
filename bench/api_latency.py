"""Latency of the REST API's candidate list for one 100 x 100-sentence document pair.

    .venv/bin/python bench/api_latency.py [--sentences 100] [--requests 200] [--page-size 50]

Sets up a throw-away database with one document pair of ``--sentences`` complex and simple
sentences (synthetic text in paragraphs of 10), aligns it in-process with the lexical
measures (TF-IDF for the CRF, Jaccard scored too; no encoder) so the candidates are what a
real run stores, then sends ``--requests`` authenticated (token) GETs of
``/api/candidates/?run=R&pair=P`` through Django's test client: the whole server-side stack
(middleware, DRF authentication, django-filter, pagination, serialization, PostgreSQL)
without a network. It reports p50 / p95 / max milliseconds and SQL queries per request,
for the first page (``--page-size``, default the API's 50) and for every candidate in one
page (page_size=500), after 5 warm-up requests each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _django import bench_owner, setup_django

os.environ.setdefault("DEBUG", "0")  # DEBUG keeps a log of every SQL query; production does not
setup_django()

from django.db import connection
from django.test import Client

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create
from webapp.accounts.services import api_token_create


def _sentences(count: int, seed: int) -> list[str]:
    subjects = ["The council", "A farmer", "The museum", "Our team", "The river", "A student", "The company", "The mayor"]
    verbs = ["opened", "studied", "painted", "measured", "described", "cleaned", "visited", "announced"]
    objects = ["a new bridge", "the old harbour", "three gardens", "the village school", "a small boat", "the main road"]
    return [f"{subjects[(i + seed) % 8]} {verbs[(i // 8) % 8]} {objects[(i // 64 + seed) % 6]} on day {i}." for i in range(count)]


def _document(count: int, seed: int) -> bytes:
    sentences = _sentences(count, seed)
    return "\n\n".join("\n".join(sentences[i : i + 10]) for i in range(0, count, 10)).encode()


def _timed(client: Client, url: str, requests: int) -> tuple[list[float], int, int]:
    """Milliseconds per request, SQL queries of one request, rows on the page."""
    for _ in range(5):
        client.get(url)
    queries: list[str] = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):  # survives the reconnect each request does (CONN_MAX_AGE)
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    rows = len(response.json()["results"])
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return times, len(queries), rows


def _report(label: str, times: list[float], queries: int, rows: int) -> None:
    ordered = sorted(times)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(
        f"{label:<34} rows {rows:>4}  queries {queries}  p50 {statistics.median(ordered):6.1f} ms  "
        f"p95 {p95:6.1f} ms  max {ordered[-1]:6.1f} ms  (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--page-size", type=int, default=50)
    args = parser.parse_args()

    owner = bench_owner()
    corpus, _ = corpus_get_or_create(name="API latency", language="en", owner=owner)
    report = corpus_import_files(
        corpus=corpus, files=[("Bench-adv.txt", _document(args.sentences, 0)), ("Bench-ele.txt", _document(args.sentences, 1))],
        options=ImportOptions(format="presplit"),
    )  # fmt: skip
    assert not report.errors, report.errors
    run = alignment_run_create(
        corpus=corpus, aligner_config={"measure": "tfidf_cosine", "paragraph_variant": "none"}, measures=["tfidf_cosine", "jaccard"]
    )
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    pair = corpus.pairs.get()
    token_key = api_token_create(user=owner, name="bench/api_latency.py").key
    print(
        f"pair {pair.pk}: {args.sentences} complex x {args.sentences} simple sentences; run {run.pk} stored {run.candidates_written} candidates"
    )

    client = Client(HTTP_AUTHORIZATION=f"Token {token_key}", HTTP_HOST="localhost")
    base = f"/api/candidates/?run={run.pk}&pair={pair.pk}"
    _report(f"first page (page_size={args.page_size})", *_timed(client, f"{base}&page_size={args.page_size}", args.requests))
    _report("all candidates (page_size=500)", *_timed(client, f"{base}&page_size=500", args.requests))
    _report("aligned only, by score", *_timed(client, f"{base}&label=aligned&ordering=-score", args.requests))


if __name__ == "__main__":
    main()
