"""How long the Import page holds a web worker for a file at the size limit, and how long the import job then takes.

    .venv/bin/python bench/import_page.py [--bytes N] [--repeats 3]

Posts one ``text`` file of ``--bytes`` (default: IMPORT_MAX_FILE_BYTES, 5 MiB) of ordinary
five-sentence paragraphs to the Import page through Django's test client (the real view,
upload limits and staging in the database), then runs the queued import job in this process
(``import_job_execute``: what a worker does). Prints the seconds of the web request (validate,
stage, redirect) and of the job (decode, clean, split, store), and the peak RSS of each.
Before the background job, the request itself did the whole import.
"""

from __future__ import annotations

import argparse
import statistics
import time

from _django import bench_owner, setup_django
from _memory import PeakRss
from import_speed import paragraphs_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=int, default=None, help="file size (default: IMPORT_MAX_FILE_BYTES)")
    parser.add_argument("--repeats", type=int, default=3, help="uploads to time (each a new corpus)")
    args = parser.parse_args()
    setup_django()
    from django.conf import settings
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client
    from django.urls import reverse

    from alignment.importing.jobs import import_job_execute
    from alignment.importing.models import ImportJob

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    size = args.bytes or settings.IMPORT_MAX_FILE_BYTES
    text = paragraphs_file(size).encode()
    client = Client()
    client.force_login(bench_owner())
    request_seconds, job_seconds = [], []
    for number in range(args.repeats):
        form = {
            "corpus_name": f"Page bench {time.time_ns()}", "language": "en", "format": "text", "paragraph_mode": "blank",
            "filename_pattern": r"^(?P<id>.+)-(?P<level>[^-]+)$", "pairing": "all",
            "files": [SimpleUploadedFile(f"Page{number}-adv.txt", text)],
        }  # fmt: skip
        with PeakRss() as request_memory:
            start = time.perf_counter()
            response = client.post(reverse("alignment:corpus_import"), form)
            request_seconds.append(time.perf_counter() - start)
        assert response.status_code == 302, response.content[:500]
        job = ImportJob.objects.order_by("-pk").first()
        with PeakRss() as job_memory:
            start = time.perf_counter()
            import_job_execute(job_id=job.pk)
            job_seconds.append(time.perf_counter() - start)
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        print(
            f"upload {number + 1}: {len(text):,} bytes  request {request_seconds[-1]:5.2f} s (peak RSS {request_memory.peak / 2**20:4.0f} MiB)  "
            f"job {job_seconds[-1]:6.1f} s (peak RSS {job_memory.peak / 2**20:4.0f} MiB), {job.report.sentences_created:,} sentences"
        )
    print(f"median: request {statistics.median(request_seconds):.2f} s, background job {statistics.median(job_seconds):.1f} s")


if __name__ == "__main__":
    main()
