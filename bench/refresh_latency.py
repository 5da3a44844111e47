"""Latency of the annotation screen's refreshed suggestions for one 100 x 100-sentence document pair.

    .venv/bin/python bench/refresh_latency.py [--sentences 100] [--requests 50] [--refit]

Sets up a throw-away database with one document pair of ``--sentences`` complex and simple
sentences (synthetic sentences, the simple side a shortened copy of the complex one, paragraphs of 10), aligns it in-process
with the shipped default model (learned scorer + CRF, as the app's own runs), gives an annotator
the gold-free labels "simple k ~ complex k" for the first 10 %, 25 % and 50 % of the simple
sentences, and times ``GET .../suggestions/`` (what the screen asks after each label) through
Django's test client: the whole server side (session, the annotator's labels, the stored score
matrix, the clamped decoding, JSON) without a network. The aligner is loaded by the first request
(it is kept per web process), which is reported apart. ``--refit`` also times the per-pair refit
(:mod:`models_ml.aligning.refit`) on the same pair, outside the web path (the screen does not
run it). The budget the screen aims at is 300 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _django import bench_owner, setup_django

os.environ.setdefault("DEBUG", "0")
setup_django()

from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from alignment.aligning.measures import run_measure
from alignment.aligning.scoring import torch_threads
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.labelling import refresh
from annotation.labels import current_labels


def _document(count: int, simple: bool) -> bytes:
    """``count`` sentences in paragraphs of 10; the simple version drops each sentence's last clause."""
    places = ["the harbour", "the old mill", "a village school", "the station", "the river bank", "a small farm", "the market"]
    people = ["The mayor", "A teacher", "Two fishermen", "The council", "A young doctor", "The children", "Our neighbour"]
    sentences = []
    for i in range(count):
        clause = "" if simple else f", although the weather on day {i} was {['cold', 'wet', 'fine'][i % 3]}"
        sentences.append(f"{people[i % 7]} visited {places[(i // 7) % 7]} in week {i}{clause}.")
    return "\n\n".join("\n".join(sentences[k : k + 10]) for k in range(0, count, 10)).encode()


def _percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  max {ordered[-1]:6.1f} ms  (n={len(ordered)})"


def _setup(sentences: int):
    owner = bench_owner()
    corpus, _ = corpus_get_or_create(name="Refresh latency", language="en", owner=owner)
    report = corpus_import_files(
        corpus=corpus, files=[("Bench-adv.txt", _document(sentences, False)), ("Bench-ele.txt", _document(sentences, True))],
        options=ImportOptions(format="presplit"),
    )  # fmt: skip
    assert not report.errors, report.errors
    run = alignment_run_execute(
        run_id=alignment_run_create(corpus=corpus, model_dir=settings.ALIGNER_MODEL_DIR).pk, build_measure=run_measure
    )
    assert run.status == "succeeded", run.error
    annotator = get_user_model().objects.create_user("bench-annotator", password="bench-pass-123")
    project = services.project_create(name="Refresh latency", corpus=corpus, created_by=owner, overlap=1, suggestion_run=run)
    services.membership_set(project=project, user=annotator, role="annotator")
    services.assignments_distribute(project=project)
    return project, corpus.pairs.get(), annotator


def _label_first(project, pair, annotator, count: int) -> None:
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    for k in range(len(current_labels(project, annotator, pair.pk)), count):
        services.label_record(
            project=project, annotator=annotator, pair=pair, simple_sentence_id=simple[k], complex_sentence_id=complex_[k],
            label="aligned", expected_previous=None,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--refit", action="store_true", help="also time the per-pair refit (not on the screen's path)")
    args = parser.parse_args()
    project, pair, annotator = _setup(args.sentences)
    client = Client(HTTP_HOST="localhost")
    client.force_login(annotator)
    url = f"/annotate/projects/{project.pk}/pairs/{pair.pk}/suggestions/"
    print(
        f"pair {pair.pk}: {args.sentences} complex x {args.sentences} simple sentences, run {project.suggestion_run_id} (shipped default model)"
    )
    started = time.perf_counter()
    first = client.get(url)
    assert first.status_code == 200, first.content[:300]
    print(f"first request (loads the aligner once per web process): {(time.perf_counter() - started) * 1000:.0f} ms")
    for share in (0.0, 0.10, 0.25, 0.50):
        _label_first(project, pair, annotator, int(share * args.sentences))
        times, decode = [], []
        for _ in range(args.requests):
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.content[:300]
            decode.append(response.json()["seconds"] * 1000)
        print(f"{share:>4.0%} labelled: request {_percentiles(times)}; of which service {statistics.median(decode):.1f} ms (median)")
    if args.refit:
        _time_refit(project, pair, annotator)


def _time_refit(project, pair, annotator) -> None:
    """The same decoding with the per-pair refit, called directly (the screen does not run it)."""
    aligner = refresh._aligner(project.suggestion_run)
    similarity = refresh._stored_scores(project.suggestion_run, pair)
    simple_ids, simple_par = refresh._side(pair.simple_document_id)
    complex_ids, complex_par = refresh._side(pair.complex_document_id)
    fixed = refresh.fixed_links(current_labels(project, annotator, pair.pk), simple_ids, complex_ids)
    for refit in (False, True):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            with torch_threads(1):  # as the web path decodes a pair this size
                aligner.align(
                    [""] * len(complex_ids),
                    [""] * len(simple_ids),
                    complex_par,
                    simple_par,
                    similarity=similarity,
                    fixed=fixed,
                    refit=refit,
                )
            times.append((time.perf_counter() - started) * 1000)
        print(f"decode {'with' if refit else 'without'} refit, {len(fixed)} known: {_percentiles(times)}")


if __name__ == "__main__":
    main()
