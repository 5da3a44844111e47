"""A worker builds a run's scorer (model and measures) once for the shards it runs on one thread, and again when
anything it is built from changes: the run's settings, the model's files, the settings the measures read, the thread."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

from alignment.aligning import service
from alignment.aligning.measures import run_measure
from alignment.aligning.service import alignment_run_create, run_scorer
from tests.alignment.conftest import LEXICAL, TFIDF_CONFIG


def test_the_shards_of_a_run_share_its_scorer_until_what_it_is_built_from_changes(stories, tmp_path, settings, monkeypatch):
    model = tmp_path / "model"
    shutil.copytree(settings.ALIGNER_MODEL_DIR, model)
    loads: list[dict] = []
    load = service.aligner_from_run_config
    monkeypatch.setattr(service, "aligner_from_run_config", lambda config, **options: loads.append(config) or load(config, **options))
    run = alignment_run_create(corpus=stories, model_dir=str(model))

    first = run_scorer(run, run_measure, "cpu")
    assert run_scorer(run, run_measure, "cpu") is first and len(loads) == 1  # the next shard on this thread
    twin = alignment_run_create(corpus=stories, model_dir=str(model))
    assert run_scorer(twin, run_measure, "cpu") is first  # another run of the same model and settings
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(run_scorer, run, run_measure, "cpu").result() is not first  # a thread builds its own
    assert len(loads) == 2

    weights = model / "crf.pt"
    stamp = weights.stat()
    os.utime(weights, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))  # the model rewritten in place
    changed = run_scorer(run, run_measure, "cpu")
    assert changed is not first and len(loads) == 3
    assert run_scorer(run, run_measure, "cpu") is changed

    lexical = alignment_run_create(corpus=stories, aligner_config=TFIDF_CONFIG, measures=LEXICAL)
    other = run_scorer(lexical, run_measure, "cpu")
    assert other is not changed and other.primary == "tfidf_cosine"
    settings.ENCODER_BATCH_SIZE = 4  # the settings the measures are built from (a test's override)
    assert run_scorer(lexical, run_measure, "cpu") is not other
    assert len(loads) == 5
