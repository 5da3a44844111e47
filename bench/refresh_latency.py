"""Cost of the annotation screen's live suggestion refresh on a 500 x 500 pair, and what it does to label saves.

    .venv/bin/python bench/refresh_latency.py [--sentences 500] [--requests 40] [--full-requests 5]
                                              [--annotators 20] [--seconds 15] [--rounds 3] [--no-in-process] [--no-load]

Sets up a throw-away database with one document pair of ``--sentences`` complex and simple sentences
(synthetic sentences, the simple side a shortened copy of the complex one, paragraphs of 10), aligned
in-process by the shipped default model (learned scorer + CRF, as the app's own runs).

In process (Django's test client, the whole server side without a network): an annotator labels
"simple k ~ complex k" for the first 10 %, 25 % and 50 % of the simple sentences (in document order,
as annotators work), then every 10th sentence of the rest as well (labels spread over the pair), then
the sentences halfway between those linked two sentences further on (labels that move the path). At
each step it times ``GET .../suggestions/`` (what the screen asks after each label: only the windows
near the labels, ``annotation/labelling/refresh.py``) and the full re-decoding it replaces
(``refresh.full_suggestions``, called directly), both as the service's own time, and prints p50/p95
of each with the ratio of the p95s, the rows the CRF ran over, and how many answered sentences have
the full decoding's suggestions (the windows' cost in accuracy), re-decoded and answered as the run's.
The decoding runs at the process's priority here (the web server nices it: ``refresh.DECODER_NICENESS``). The first request of a process
loads the aligner and unpacks the pair (reported apart).

Under load (``--annotators`` users against gunicorn as ``runapp`` starts it, on a free port): every
annotator is assigned the pair and has labelled every 20th simple sentence; each saves labels (simple k
with complex k - 1, k or k + 1, in a random order: labels all over the pair) with a think time (uniform
0-4 s, as ``bench/annotation_load.py``'s second phase) for ``--seconds``, alone, then while every
annotator also runs a refresh loop (ask, and on 200 ask again at once, following ``next``; on 429 wait
its Retry-After: what a page does, as fast as it can). Prints the label-save p50/p95 without and with
the loops and their ratio, pooled over ``--rounds`` alternating phases (the machine's other load
drifts), and the refreshes' statuses and server time (``Server-Timing``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import tempfile
import threading
import time

from _django import bench_owner, setup_django

os.environ.setdefault("DEBUG", "0")
setup_django()

from annotation_load import PASSWORD, Client, _free_port, _percentile, _run_phase, _start_server, _stop_server
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client as TestClient

from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, alignment_run_execute
from alignment.importing.readers import ImportOptions
from alignment.importing.service import corpus_import_files
from alignment.services import corpus_get_or_create
from annotation import services
from annotation.labelling import refresh
from annotation.labelling.screen import candidates_by_simple
from annotation.labels import LINKED_LABELS, current_labels


def _document(count: int, simple: bool) -> bytes:
    """``count`` sentences in paragraphs of 10; the simple version drops each sentence's last clause."""
    places = ["the harbour", "the old mill", "a village school", "the station", "the river bank", "a small farm", "the market"]
    people = ["The mayor", "A teacher", "Two fishermen", "The council", "A young doctor", "The children", "Our neighbour"]
    sentences = []
    for i in range(count):
        clause = "" if simple else f", although the weather on day {i} was {['cold', 'wet', 'fine'][i % 3]}"
        sentences.append(f"{people[i % 7]} visited {places[(i // 7) % 7]} in week {i}{clause}.")
    return "\n\n".join("\n".join(sentences[k : k + 10]) for k in range(0, count, 10)).encode()


def _summary(times_ms: list[float]) -> str:
    return f"p50 {statistics.median(times_ms):7.1f}  p95 {_percentile(times_ms, 0.95):7.1f} ms"


def _setup(sentences: int, annotators: int):
    owner = bench_owner()
    corpus, _ = corpus_get_or_create(name="Refresh latency", language="en", owner=owner)
    report = corpus_import_files(
        corpus=corpus, files=[("Bench-adv.txt", _document(sentences, False)), ("Bench-ele.txt", _document(sentences, True))],
        options=ImportOptions(format="presplit"),
    )  # fmt: skip
    assert not report.errors, report.errors
    run = alignment_run_create(corpus=corpus, model_dir=settings.ALIGNER_MODEL_DIR, measures=["learned"])
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    assert run.status == "succeeded", run.error
    users = [get_user_model().objects.create_user(f"bench-annotator{k}", password=PASSWORD) for k in range(annotators)]
    project = services.project_create(name="Refresh latency", corpus=corpus, created_by=owner, overlap=len(users), suggestion_run=run)
    for user in users:
        services.membership_set(project=project, user=user, role="annotator")
    services.assignments_distribute(project=project)
    pair = corpus.pairs.get()
    simple = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    return project, pair, users, simple, complex_


def _label(project, pair, annotator, simple: list[int], complex_: list[int], rows, offset: int = 0) -> None:
    """Link each of ``rows`` (simple k) to complex k + ``offset``."""
    known = {simple_id for simple_id, _ in current_labels(project, annotator, pair.pk)}
    for k in rows:
        if simple[k] not in known:
            services.label_record(
                project=project, annotator=annotator, pair=pair, simple_sentence_id=simple[k],
                complex_sentence_id=complex_[min(k + offset, len(complex_) - 1)], label="aligned", expected_previous=None,
            )  # fmt: skip


def _suggested(entries: list[dict]) -> set[int]:
    """The complex sentences a list suggests (aligned or partial): what the screen offers to accept."""
    return {entry["complex"] for entry in entries if entry["predicted"] in LINKED_LABELS}


def in_process(project, pair, annotator, simple, complex_, requests: int, full_requests: int) -> None:
    """Windowed refresh (through the test client) against the full decoding (called directly), step by step."""
    refresh.DECODER_NICENESS = 0  # the work's own cost: niced, the decoding would also wait for this machine's other processes
    client = TestClient(HTTP_HOST="localhost")
    client.force_login(annotator)
    url = f"/annotate/projects/{project.pk}/pairs/{pair.pk}/suggestions/"
    started = time.perf_counter()
    assert client.get(url).status_code == 200
    print(f"first request (loads the aligner, unpacks the pair; once per web process): {(time.perf_counter() - started) * 1000:.0f} ms")
    m = len(simple)
    steps = [("10 % in order", range(m // 10), 0), ("25 % in order", range(m // 4), 0), ("50 % in order", range(m // 2), 0)]
    steps += [("+ every 10th", range(m // 2, m, 10), 0), ("+ 2 off, spread", range(m // 2 + 5, m, 10), 2)]
    run_says = candidates_by_simple(project.suggestion_run, pair, {})  # the run's stored suggestions, as the screen loads them
    print(
        "labelled        | windowed request          | windowed service          | full service              | p95 full/windowed | rows decoded | suggestions = full's"
    )
    for name, rows, offset in steps:
        _label(project, pair, annotator, simple, complex_, rows, offset)
        request_ms, service_ms, decoded = [], [], []
        for _ in range(requests):
            began = time.perf_counter()
            answer = client.get(url)
            request_ms.append((time.perf_counter() - began) * 1000)
            assert answer.status_code == 200, answer.content[:300]
            payload = answer.json()
            service_ms.append(payload["seconds"] * 1000)
            decoded.append(payload["decoded_rows"])
        full_ms = []
        for _ in range(full_requests):
            full = refresh.full_suggestions(project, annotator, pair)
            full_ms.append(full["seconds"] * 1000)
        same = sum(_suggested(payload["candidates"][s]) == _suggested(full["candidates"][s]) for s in payload["candidates"])
        kept = sum(_suggested(run_says.get(s, [])) == _suggested(full["candidates"][str(s)]) for s in payload["stored"])
        print(
            f"{name:15} | {_summary(request_ms)} | {_summary(service_ms)} | {_summary(full_ms)} | "
            f"{_percentile(full_ms, 0.95) / _percentile(service_ms, 0.95):17.0f} | {max(decoded):12d} | "
            f"{same}/{len(payload['candidates'])} re-decoded, {kept}/{len(payload['stored'])} stored"
            + ("" if payload["next"] is None else "; more windows follow (next)")
        )


def _refresh_loop(client: Client, path: str, stop: threading.Event, tally: dict, lock: threading.Lock, *, once: bool = False) -> None:
    """One page refreshing as fast as the server lets it: at once after a 200 (following ``next``), after Retry-After on 429."""
    start = 0
    while once or not stop.is_set():
        once = False
        connection = http.client.HTTPConnection(client.host, client.port, timeout=60)
        try:
            connection.request("GET", f"{path}?from={start}" if start else path, headers={"Cookie": client.cookies})
            response = connection.getresponse()
            body = response.read()
            server_ms = float(re.search(r"dur=([\d.]+)", response.headers.get("Server-Timing", "dur=0")).group(1))
            status, retry = response.status, response.headers.get("Retry-After")
        except OSError:
            status, server_ms, retry, body = 0, 0.0, "1", b"{}"
        finally:
            connection.close()
        with lock:
            tally["statuses"][status] = tally["statuses"].get(status, 0) + 1
            if status == 200:
                tally["server_ms"].append(server_ms)
        if status == 200:
            start = json.loads(body).get("next") or 0
        else:
            stop.wait(float(retry or 1))


def _with_loops(clients: list[Client], screen: str, keys, previous, seconds: float, seed: int, refreshes: dict):
    """A save phase while every client also runs a refresh loop; the refreshes' statuses and times go into ``refreshes``."""
    stop, lock = threading.Event(), threading.Lock()
    loops = [threading.Thread(target=_refresh_loop, args=(c, f"{screen}suggestions/", stop, refreshes, lock)) for c in clients]
    for loop in loops:
        loop.start()
    try:
        saves, _, _ = _run_phase(clients, f"{screen}label/", keys, previous, seconds=seconds, think=2.0, double_every=0, seed=seed)
    finally:
        stop.set()
        for loop in loops:
            loop.join()
    return saves


def under_load(project, pair, users, simple, complex_, seconds: float, rounds: int) -> None:
    """Label saves of every annotator with think time, without and with a refresh loop per annotator, in alternating
    phases (``rounds`` of each), so that a change in the machine's other load falls on both alike."""
    call_command("collectstatic", interactive=False, verbosity=0)  # as runapp does: gunicorn serves the manifest's names
    for user in users:
        _label(project, pair, user, simple, complex_, range(0, len(simple), 20))
    log_path = os.path.join(tempfile.mkdtemp(prefix="aligner-bench-logs-"), "gunicorn.log")
    port = _free_port()
    server = _start_server("gunicorn", port, log_path)
    alone: list[float] = []
    loaded: list[float] = []
    refreshes: dict = {"statuses": {}, "server_ms": []}
    load_before = os.getloadavg()[0]
    try:
        clients = []
        for user in users:
            client = Client(f"http://127.0.0.1:{port}")
            client.login(user.username, PASSWORD)
            clients.append(client)
        screen = f"/annotate/projects/{project.pk}/pairs/{pair.pk}/"
        warm = threading.Event()
        warm.set()  # one request each, no loop: each web worker loads the aligner and unpacks the pair on its first refresh
        for client in clients[:8]:
            _refresh_loop(client, f"{screen}suggestions/", warm, {"statuses": {}, "server_ms": []}, threading.Lock(), once=True)
        keys = [(s, complex_[j + d]) for j, s in enumerate(simple) for d in (-1, 0, 1) if 0 <= j + d < len(complex_)]  # plausible links
        previous: list[dict] = [{} for _ in clients]
        for number in range(rounds):
            phase, _, _ = _run_phase(
                clients, f"{screen}label/", keys, previous, seconds=seconds, think=2.0, double_every=0, seed=2 * number
            )
            alone += phase.latencies_ms
            with_loops = _with_loops(clients, screen, keys, previous, seconds, 2 * number + 1, refreshes)
            loaded += with_loops.latencies_ms
            print(f"  round {number + 1}: save p95 alone {_percentile(phase.latencies_ms, 0.95):.0f} ms, "
                  f"with loops {_percentile(with_loops.latencies_ms, 0.95):.0f} ms")  # fmt: skip
    finally:
        _stop_server(server, "gunicorn")
    print(
        f"label saves, {len(users)} annotators, think time 0-4 s, {rounds} x {seconds:.0f} s each way (client-side latency; "
        f"load average of the machine {load_before:.1f} before, {os.getloadavg()[0]:.1f} after):"
    )
    print(f"  alone:                    {_summary(alone)}  (n={len(alone)})")
    print(f"  with {len(users)} refresh loops: {_summary(loaded)}  (n={len(loaded)})")
    print(f"  p95 with / without: {_percentile(loaded, 0.95) / _percentile(alone, 0.95):.2f}")
    refreshed = refreshes["server_ms"]
    print(
        f"refreshes: statuses {dict(sorted(refreshes['statuses'].items()))}; "
        f"server time of the 200s {_summary(refreshed) if refreshed else '-'}"
    )
    print(f"  gunicorn log: {log_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--requests", type=int, default=40, help="windowed refreshes timed per step")
    parser.add_argument("--full-requests", type=int, default=5, help="full decodings timed per step")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each load phase")
    parser.add_argument("--rounds", type=int, default=3, help="phases without and with the refresh loops, alternating")
    parser.add_argument("--no-in-process", dest="in_process", action="store_false")
    parser.add_argument("--no-load", dest="load", action="store_false")
    args = parser.parse_args()
    random.seed(0)
    project, pair, users, simple, complex_ = _setup(args.sentences, args.annotators + 1)
    print(
        f"pair {pair.pk}: {len(complex_)} complex x {len(simple)} simple sentences, run {project.suggestion_run_id} (shipped default model); "
        f"{os.cpu_count()} cores"
    )
    if args.in_process:
        in_process(project, pair, users[-1], simple, complex_, args.requests, args.full_requests)
    if args.load:
        under_load(project, pair, users[:-1], simple, complex_, args.seconds, args.rounds)


if __name__ == "__main__":
    main()
