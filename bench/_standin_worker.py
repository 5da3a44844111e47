"""``manage.py`` for a bench's worker processes, with the benches' stand-in encoder loadable by its name.

    python bench/_standin_worker.py procrastinate worker --queues mining ...

A mining job names its encoder, and a worker loads it by that name (``alignment.tasks._job_encoder``). A bench whose
job names the stand-in of ``bench/_standin.py`` ("bench-topic", ``BENCH_TOPIC_DIMENSIONS`` wide) could not run
that job's encoding in its workers, only in its own process; through this entry point the workers encode it as they
would any encoder's, in encode shards spread over them. Every other name loads as the app loads it.
"""

from __future__ import annotations

import os
import sys

from _django import REPO_ROOT

STAND_IN = "bench-topic"


class _StandIn:
    """The stand-in with the app encoder's ``encode(texts, batch_size=...)``."""

    def __init__(self, dimensions: int) -> None:
        from bench._standin import topic_encoder

        self._encode = topic_encoder(dimensions)

    def encode(self, texts: list[str], batch_size: int = 0):
        return self._encode(list(texts))


def main() -> None:
    sys.path.insert(0, str(REPO_ROOT))
    os.chdir(REPO_ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from alignment.aligning import measures

    app_encoder, loaded = measures.app_encoder, {}

    def encoder(name: str):
        if name != STAND_IN:
            return app_encoder(name)
        if name not in loaded:
            loaded[name] = _StandIn(int(os.environ["BENCH_TOPIC_DIMENSIONS"]))
        return loaded[name]

    measures.app_encoder = encoder
    from django.core.management import execute_from_command_line

    execute_from_command_line(["manage.py", *sys.argv[1:]])


if __name__ == "__main__":
    main()
