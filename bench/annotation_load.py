"""Server time of the annotation screen and of label saves under 20 concurrent annotators, on loopback.

    .venv/bin/python bench/annotation_load.py [--annotators 20] [--saves 50] [--sentences 100]

Sets up a throw-away database with one 100 x 100-sentence document pair, an alignment run
(TF-IDF, in-process) supplying suggestions, a project and ``--annotators`` annotators all
assigned the pair; starts the real web server (``manage.py runserver --noreload``, as
``scripts/run.sh`` does) on 127.0.0.1; then
1. renders the main screen 20 times for one annotator and reports the server time
   (the ``Server-Timing`` header: everything Django does, not the network);
2. lets every annotator (one thread each, own session) save ``--saves`` labels, each
   after a think time (uniform, mean ``--think`` seconds; 0 = as fast as the server
   answers), each naming the event it replaces, and reports p50/p95/max
   server time, errors, and whether the number of label events in the database equals
   the number of saves the server acknowledged (zero lost events).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from _django import bench_owner, setup_django
from onestopenglish import _database_url

PORT = 8791


def _sentences(count: int, seed: int) -> list[str]:
    subjects = ["The council", "A farmer", "The museum", "Our team", "The river", "A student", "The company", "The mayor"]
    verbs = ["opened", "studied", "painted", "measured", "described", "cleaned", "visited", "announced"]
    objects = ["a new bridge", "the old harbour", "three gardens", "the village school", "a small boat", "the main road"]
    return [f"{subjects[(i + seed) % 8]} {verbs[(i // 8) % 8]} {objects[(i // 64 + seed) % 6]} on day {i}." for i in range(count)]


class Client:
    """One annotator's browser: a cookie jar, CSRF token, and timed requests."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def _csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def login(self, username: str, password: str) -> None:
        self.opener.open(f"{self.base}/accounts/login/").read()
        data = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": self._csrf()}).encode()
        self.opener.open(urllib.request.Request(f"{self.base}/accounts/login/", data=data)).read()

    def get(self, path: str) -> tuple[int, float, bytes]:
        with self.opener.open(f"{self.base}{path}") as response:
            return response.status, _server_ms(response.headers), response.read()

    def post(self, path: str, fields: dict) -> tuple[int, float, bytes]:
        request = urllib.request.Request(
            f"{self.base}{path}", data=urllib.parse.urlencode(fields).encode(), headers={"X-CSRFToken": self._csrf()}
        )
        try:
            with self.opener.open(request) as response:
                return response.status, _server_ms(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, _server_ms(error.headers), error.read()


def _server_ms(headers) -> float:
    match = re.search(r"dur=([\d.]+)", headers.get("Server-Timing", ""))
    return float(match.group(1)) if match else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--think", type=float, default=2.0,
                        help="mean seconds an annotator spends before each save (uniform 0..2x); 0 = flat out (a stress test)")
    args = parser.parse_args()
    setup_django()
    from django.contrib.auth import get_user_model

    from alignment import services as corpus_services
    from alignment.aligning.service import alignment_run_create, alignment_run_execute
    from alignment.importing.readers import ImportOptions
    from alignment.importing.service import corpus_import_files
    from alignment.tasks import run_measure
    from annotation import services
    from annotation.models import LabelEvent

    owner = bench_owner()
    corpus, _ = corpus_services.corpus_get_or_create(name="Load", language="en", owner=owner)
    complex_text = "\n\n".join("\n".join(_sentences(args.sentences, 0)[i : i + 10]) for i in range(0, args.sentences, 10))
    simple_text = "\n\n".join("\n".join(_sentences(args.sentences, 1)[i : i + 10]) for i in range(0, args.sentences, 10))
    corpus_import_files(corpus=corpus, files=[("Load-adv.txt", complex_text.encode()), ("Load-ele.txt", simple_text.encode())],
                        options=ImportOptions(format="presplit"))
    run = alignment_run_create(corpus=corpus, aligner_config={"measure": "tfidf_cosine"}, measures=["tfidf_cosine", "jaccard"])
    run = alignment_run_execute(run_id=run.pk, build_measure=run_measure)
    pair = corpus.pairs.get()
    project = services.project_create(name="Load", corpus=corpus, created_by=owner, overlap=args.annotators, suggestion_run=run)
    users = []
    for k in range(args.annotators):
        user = get_user_model().objects.create_user(f"annotator{k}", password="load-pass-123")
        services.membership_set(project=project, user=user, role="annotator")
        users.append(user)
    services.assignments_distribute(project=project)
    simple_ids = list(pair.simple_document.sentences.order_by("index").values_list("pk", flat=True))
    complex_ids = list(pair.complex_document.sentences.order_by("index").values_list("pk", flat=True))
    print(f"pair: {len(simple_ids)} simple x {len(complex_ids)} complex sentences; {run.candidates_written} suggestions; "
          f"{args.annotators} annotators")

    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{PORT}", "--noreload"],
        env={**os.environ, "DATABASE_URL": _database_url()}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{PORT}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/accounts/login/").read()
                break
            except OSError:
                time.sleep(0.2)
        screen_path = f"/annotate/projects/{project.pk}/pairs/{pair.pk}/"
        first = Client(base)
        first.login("annotator0", "load-pass-123")
        first.get(screen_path)  # warm-up: template loading, first queries
        screen_times = []
        for _ in range(20):
            status, server_ms, body = first.get(screen_path)
            assert status == 200 and b"simple sentences labelled" in body
            screen_times.append(server_ms)
        print(f"main screen ({len(simple_ids)} x {len(complex_ids)}): server time median {statistics.median(screen_times):.0f} ms, "
              f"max {max(screen_times):.0f} ms over {len(screen_times)} renders")

        clients = []
        for k in range(args.annotators):
            client = Client(base)
            client.login(f"annotator{k}", "load-pass-123")
            clients.append(client)
        save_path = f"{screen_path}label/"
        times: list[float] = []
        errors: list[str] = []
        acknowledged = [0]
        lock = threading.Lock()
        start = threading.Barrier(args.annotators)

        def annotate(k: int, client: Client) -> None:
            previous: dict[tuple[int, int], int] = {}
            pause = random.Random(k)
            start.wait()
            for n in range(args.saves):
                if args.think:
                    time.sleep(pause.uniform(0, 2 * args.think))
                key = (simple_ids[(n + k) % len(simple_ids)], complex_ids[(n * 7 + k) % len(complex_ids)])
                fields = {"simple_sentence_id": key[0], "complex_sentence_id": key[1], "label": ("aligned", "partial", "not_aligned")[n % 3],
                          "expected_previous": previous.get(key, ""), "seconds_spent": "1.0"}
                status, server_ms, body = client.post(save_path, fields)
                with lock:
                    times.append(server_ms)
                    if status == 200:
                        acknowledged[0] += 1
                        previous[key] = json.loads(body)["event"]
                    else:
                        errors.append(f"{status}: {body[:120]!r}")

        threads = [threading.Thread(target=annotate, args=(k, c)) for k, c in enumerate(clients)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        times.sort()
        stored = LabelEvent.objects.filter(project=project).count()
        p95 = times[int(0.95 * (len(times) - 1))]
        print(f"label saves: {len(times)} by {args.annotators} concurrent annotators (think time mean {args.think} s) "
              f"in {wall:.1f} s ({len(times) / wall:.0f}/s); "
              f"server time p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, max {times[-1]:.1f} ms; "
              f"errors {len(errors)}; events stored {stored} = acknowledged {acknowledged[0]}: {stored == acknowledged[0]}")
        for error in errors[:5]:
            print("  ", error)
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
