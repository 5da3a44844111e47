"""Label saves by 20 concurrent annotators against gunicorn (as ``scripts/run.sh`` starts it) and runserver.

    .venv/bin/python bench/annotation_load.py [--annotators 20] [--flat-seconds 20] [--think-seconds 40]
                                              [--think 2.0] [--double-every 10] [--servers gunicorn,runserver]

Sets up a throw-away database (its own STATE_DIR) with one 100 x 100-sentence document pair,
an alignment run (TF-IDF, in-process) supplying suggestions, and ``--annotators`` annotators.
Then, for each server in turn (its own project, so the counts are separate), on a free port
on 127.0.0.1:
0. one annotator renders the annotate screen 20 times: the median server time (``Server-Timing``);
1. every annotator (one thread each, own session, logged in through the login form with its
   CSRF token) saves labels through the annotate page's endpoint (POST .../label/ with
   ``expected_previous``, as annotate_saving.js does) as fast as the server answers, for
   ``--flat-seconds``: saves per second;
2. the same with a think time before each save (uniform, mean ``--think`` s), for
   ``--think-seconds``: p50/p95 of the save latency the client sees;
every ``--double-every``-th save is sent twice at once (a double click). Afterwards the
acknowledged saves (HTTP 200 with an event id) are compared with the label events stored:
lost = acknowledged but not stored; duplicated = two stored events for one first label
of the same sentence pair by the same annotator (what a double submit must not create);
unacknowledged = stored but never acknowledged. Prints one table row per server.
"""

from __future__ import annotations

import argparse
import http.client
import http.cookiejar
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from _django import REPO_ROOT, bench_owner, database_url, setup_django

PASSWORD = "load-pass-123"
LABELS = ("aligned", "partial", "not_aligned")


def _sentences(count: int, seed: int) -> list[str]:
    subjects = ["The council", "A farmer", "The museum", "Our team", "The river", "A student", "The company", "The mayor"]
    verbs = ["opened", "studied", "painted", "measured", "described", "cleaned", "visited", "announced"]
    objects = ["a new bridge", "the old harbour", "three gardens", "the village school", "a small boat", "the main road"]
    return [f"{subjects[(i + seed) % 8]} {verbs[(i // 8) % 8]} {objects[(i // 64 + seed) % 6]} on day {i}." for i in range(count)]


class Client:
    """One annotator's browser: a cookie jar and the CSRF token, a new connection per request."""

    def __init__(self, base: str) -> None:
        self.base = base
        parts = urllib.parse.urlsplit(base)
        self.host, self.port = parts.hostname, parts.port
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def _csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def login(self, username: str, password: str) -> None:
        self.opener.open(f"{self.base}/accounts/login/", timeout=60).read()
        data = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": self._csrf()}).encode()
        with self.opener.open(urllib.request.Request(f"{self.base}/accounts/login/", data=data), timeout=60) as response:
            if "/accounts/login/" in response.url:
                raise SystemExit(f"log-in as {username} failed at {self.base}")
        self.cookies = "; ".join(f"{c.name}={c.value}" for c in self.jar)
        self.csrf = self._csrf()

    def server_ms(self, path: str) -> float:
        """GET ``path``; the server's own time from the ``Server-Timing`` header every response carries."""
        with self.opener.open(f"{self.base}{path}", timeout=60) as response:
            response.read()
            return float(re.search(r"dur=([\d.]+)", response.headers["Server-Timing"]).group(1))

    def post(self, path: str, fields: dict) -> tuple[int, float, bytes]:
        """(status, client-side latency in ms, body); status 0 = no answer (connection error or timeout).

        Sent with ``http.client`` and the log-in's cookies as one header rather than through urllib's
        opener and cookie jar, whose per-request work is CPU taken from the server under test: the
        load generator shares the machine's cores with it.
        """
        body = urllib.parse.urlencode(fields)
        headers = {"Cookie": self.cookies, "X-CSRFToken": self.csrf, "Content-Type": "application/x-www-form-urlencoded"}
        began = time.perf_counter()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, 1000 * (time.perf_counter() - began), response.read()
        except OSError as error:
            return 0, 1000 * (time.perf_counter() - began), str(error).encode()
        finally:
            connection.close()


@dataclass
class Tally:
    """Every answer of one phase, shared by the annotator threads (under ``lock``)."""

    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    acknowledged: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, status: int, latency_ms: float, body: bytes) -> int | None:
        with self.lock:
            self.latencies_ms.append(latency_ms)
            self.statuses[status] += 1
            if status == 200:
                event = json.loads(body)["event"]
                self.acknowledged.add(event)
                return event
            if status != 409 and len(self.errors) < 5:
                self.errors.append(f"{status}: {body[:160]!r}")
        return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_server(kind: str, port: int, log_path: str) -> subprocess.Popen:
    from webapp.management.commands.runapp import gunicorn_command, gunicorn_env

    bind = f"127.0.0.1:{port}"
    command = gunicorn_command(bind) if kind == "gunicorn" else [sys.executable, "manage.py", "runserver", bind, "--noreload"]
    log = open(log_path, "w")  # noqa: SIM115 - kept open for the server's lifetime
    env = gunicorn_env() if kind == "gunicorn" else dict(os.environ)
    server = subprocess.Popen(command, cwd=REPO_ROOT, env={**env, "DATABASE_URL": database_url()}, stdout=log, stderr=log)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://{bind}/accounts/login/", timeout=60).read()
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"{kind} exited with status {server.returncode}; see {log_path}") from None
            time.sleep(0.2)
    raise SystemExit(f"{kind} did not answer on {bind} within 2 minutes; see {log_path}")


def _stop_server(server: subprocess.Popen, kind: str) -> None:
    server.send_signal(signal.SIGTERM if kind == "gunicorn" else signal.SIGINT)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _run_phase(
    clients: list[Client],
    save_path: str,
    keys: list[tuple[int, int]],
    previous: list[dict],
    *,
    seconds: float,
    think: float,
    double_every: int,
    seed: int,
) -> tuple[Tally, float, int]:
    """All annotators save labels for ``seconds``; returns the tally, the wall time and the double submits sent."""
    tally = Tally()
    start = threading.Barrier(len(clients))
    doubles = [0]

    def annotate(k: int, client: Client) -> None:
        pause = random.Random(seed + k)
        start.wait()
        deadline = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < deadline:
            if think:
                time.sleep(pause.uniform(0, 2 * think))
            key = keys[(n * 7 + k * 131 + seed) % len(keys)]
            fields = {
                "simple_sentence_id": key[0],
                "complex_sentence_id": key[1],
                "label": LABELS[(n + k) % 3],
                "expected_previous": previous[k].get(key, ""),
                "seconds_spent": "1.0",
            }
            results: list[int | None] = []
            if double_every and n % double_every == double_every - 1:
                twin = threading.Thread(target=lambda r=results, f=fields: r.append(tally.record(*client.post(save_path, f))))
                twin.start()
                results.append(tally.record(*client.post(save_path, fields)))
                twin.join()
                with tally.lock:
                    doubles[0] += 1
            else:
                results.append(tally.record(*client.post(save_path, fields)))
            saved = [event for event in results if event is not None]
            if saved:
                previous[k][key] = max(saved)
            n += 1

    threads = [threading.Thread(target=annotate, args=(k, client)) for k, client in enumerate(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.perf_counter() - began, doubles[0]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> None:
    """Long because it is one measurement script read top to bottom: each step prints its figures as it goes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--flat-seconds", type=float, default=20.0, help="length of the no-think-time phase")
    parser.add_argument("--think-seconds", type=float, default=40.0, help="length of the think-time phase")
    parser.add_argument("--think", type=float, default=2.0, help="mean think time before each save (uniform 0..2x)")
    parser.add_argument("--double-every", type=int, default=10, help="every n-th save is sent twice at once; 0 = never")
    parser.add_argument("--servers", default="gunicorn,runserver")
    args = parser.parse_args()
    setup_django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db.models import Count

    from alignment import services as corpus_services
    from alignment.aligning.measures import run_measure
    from alignment.aligning.service import alignment_run_create, alignment_run_execute
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from annotation import services
    from annotation.models import LabelEvent
    from webapp.management.commands.runapp import web_workers

    call_command("collectstatic", interactive=False, verbosity=0)  # as runapp does: gunicorn serves the manifest's names
    owner = bench_owner()
    corpus, _ = corpus_services.corpus_get_or_create(name="Load", language="en", owner=owner)
    complex_text = "\n\n".join("\n".join(_sentences(args.sentences, 0)[i : i + 10]) for i in range(0, args.sentences, 10))
    simple_text = "\n\n".join("\n".join(_sentences(args.sentences, 1)[i : i + 10]) for i in range(0, args.sentences, 10))
    corpus_import_files(
        corpus=corpus,
        files=[("Load-adv.txt", complex_text.encode()), ("Load-ele.txt", simple_text.encode())],
        options=ImportOptions(format="presplit"),
    )
    run = alignment_run_create(corpus=corpus, aligner_config={"measure": "tfidf_cosine"}, measures=["tfidf_cosine", "jaccard"])
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    pair = corpus.pairs.get()
    users = [get_user_model().objects.create_user(f"annotator{k}", password=PASSWORD) for k in range(args.annotators)]
    simple_ids = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ids = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    keys = [(s, c) for s in simple_ids for c in complex_ids]
    print(
        f"pair: {len(simple_ids)} simple x {len(complex_ids)} complex sentences; {args.annotators} annotators; "
        f"flat out {args.flat_seconds:.0f} s, then think time mean {args.think} s for {args.think_seconds:.0f} s; "
        f"every {args.double_every}th save sent twice; {os.cpu_count()} cores, gunicorn workers {web_workers()}"
    )

    rows = []
    log_dir = tempfile.mkdtemp(prefix="aligner-bench-logs-")
    for kind in args.servers.split(","):
        project = services.project_create(name=f"Load {kind}", corpus=corpus, created_by=owner, overlap=args.annotators, suggestion_run=run)
        for user in users:
            services.membership_set(project=project, user=user, role="annotator")
        services.assignments_distribute(project=project)
        port = _free_port()
        log_path = os.path.join(log_dir, f"{kind}.log")
        server = _start_server(kind, port, log_path)
        try:
            base = f"http://127.0.0.1:{port}"
            clients = []
            for user in users:
                client = Client(base)
                client.login(user.username, PASSWORD)
                clients.append(client)
            screen_path = f"/annotate/projects/{project.pk}/pairs/{pair.pk}/"
            clients[0].server_ms(screen_path)  # warm-up: template loading, first queries
            screen_ms = [clients[0].server_ms(screen_path) for _ in range(20)]
            save_path = f"{screen_path}label/"
            previous: list[dict] = [{} for _ in clients]
            flat, flat_wall, flat_doubles = _run_phase(
                clients, save_path, keys, previous, seconds=args.flat_seconds, think=0, double_every=args.double_every, seed=1
            )
            thought, _, think_doubles = _run_phase(
                clients, save_path, keys, previous, seconds=args.think_seconds, think=args.think, double_every=args.double_every, seed=2
            )
        finally:
            _stop_server(server, kind)
        events = LabelEvent.objects.filter(project=project)
        stored = set(events.values_list("pk", flat=True))
        acknowledged = flat.acknowledged | thought.acknowledged
        first_labels = events.filter(previous__isnull=True, undoes__isnull=True).values("annotator", "simple_sentence", "complex_sentence")
        duplicated = sum(group["n"] - 1 for group in first_labels.annotate(n=Count("id")) if group["n"] > 1)
        statuses = flat.statuses + thought.statuses
        rows.append(
            {
                "server": kind,
                "screen ms (median)": f"{statistics.median(screen_ms):.0f}",
                "requests/s flat out": f"{sum(flat.statuses.values()) / flat_wall:.0f}",
                "p50 ms (think)": f"{statistics.median(thought.latencies_ms):.0f}" if thought.latencies_ms else "-",
                "p95 ms (think)": f"{_percentile(thought.latencies_ms, 0.95):.0f}",
                "requests": str(sum(statuses.values())),
                "double submits": str(flat_doubles + think_doubles),
                "acknowledged": str(len(acknowledged)),
                "409": str(statuses[409]),
                "5xx": str(sum(n for status, n in statuses.items() if status >= 500)),
                "no answer": str(statuses[0]),
                "stored": str(len(stored)),
                "lost": str(len(acknowledged - stored)),
                "duplicated": str(duplicated),
                "unacknowledged": str(len(stored - acknowledged)),
            }
        )
        for error in (flat.errors + thought.errors)[:5]:
            print(f"  {kind}: {error}")
        print(f"  {kind} log: {log_path}")

    headers = list(rows[0])
    widths = [max(len(h), *(len(row[h]) for row in rows)) for h in headers]
    print(" | ".join(h.rjust(w) for h, w in zip(headers, widths)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(row[h].rjust(w) for h, w in zip(headers, widths)))


if __name__ == "__main__":
    main()
