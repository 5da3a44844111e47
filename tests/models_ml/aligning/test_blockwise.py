"""Huge pairs block by block: the plan covers every simple sentence once, stays bounded, and follows the content."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.blockwise import Block, align_in_blocks, plan_blocks, rows_for_span
from tests.models_ml.test_cli import run_cli

NOUNS = ["bees", "rain", "boats", "cats", "trams", "kids", "rivers", "bells", "farmers", "tigers"]


def story(count: int, offset: int = 0) -> list[str]:
    """``count`` complex sentences, each findable by its own number word (``n123``)."""
    return [f"The {NOUNS[i % 10]} of chapter n{i + offset} moved slowly through the old town today." for i in range(count)]


def retell(complex_sentences: list[str], keep: range) -> list[str]:
    return [" ".join(complex_sentences[i].split()[:5]) + "." for i in keep]  # "The bees of chapter n12."


@pytest.mark.slow
def test_the_plan_covers_every_simple_sentence_once_in_order_within_the_column_budget():
    complex_sentences = story(3000)
    simple = retell(complex_sentences, range(0, 3000, 2))
    plan = plan_blocks(simple, complex_sentences, block_rows=100, max_cols=256)
    assert [block.rows for block in plan] == [(start, min(start + 100, 1500)) for start in range(0, 1500, 100)]
    for block in plan:
        columns = block.columns()
        assert 0 < len(columns) <= 256
        assert np.all(np.diff(columns) > 0)  # ascending, no repeats
        assert all(end <= 3000 for _, end in block.cols)


def test_each_block_finds_its_partners_even_when_the_retelling_reorders_the_chapters():
    complex_sentences = story(4000)
    chapters = [range(3000, 4000), range(1000), range(2000, 3000), range(1000, 2000)]  # told in another order
    partners = [i for chapter in chapters for i in chapter]
    simple = [retell(complex_sentences, range(i, i + 1))[0] for i in partners]
    plan = plan_blocks(simple, complex_sentences, block_rows=128, max_cols=384)
    found = sum(partners[j] in set(block.columns().tolist()) for block in plan for j in range(*block.rows))
    assert found / len(simple) >= 0.97, f"{found} of {len(simple)} partners inside their block's columns"


def test_a_short_complex_side_is_seen_whole_by_every_block():
    plan = plan_blocks(["a"] * 300, ["b"] * 200, block_rows=128, max_cols=384)
    assert plan == [Block((0, 128), ((0, 200),)), Block((128, 256), ((0, 200),)), Block((256, 300), ((0, 200),))]
    assert Block.from_json(plan[1].to_json()) == plan[1]


@pytest.mark.slow
def test_planning_memory_does_not_grow_with_the_pair_like_a_matrix():
    complex_sentences = story(30_000)
    simple = retell(complex_sentences, range(0, 30_000, 2))  # 15,000 simple sentences
    tracemalloc.start()
    try:
        plan_blocks(simple, complex_sentences)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    whole_matrix = len(simple) * len(complex_sentences) * 4  # one float32 (m, n) score matrix: 1.8 GB
    assert peak < 120 * 2**20 and peak < whole_matrix / 15, f"planning peaked at {peak / 2**20:.0f} MB"


def test_a_stop_request_abandons_the_plan():
    calls = []

    def stop() -> bool:
        calls.append(1)
        return True

    with pytest.raises(InterruptedError):
        plan_blocks(story(600), story(2000), should_stop=stop)
    assert calls == [1]


@pytest.mark.parametrize(("kwargs", "message"), [({"block_rows": 0}, "block_rows"), ({"simple_chunk": 0}, "simple_chunk")])
def test_bad_block_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plan_blocks(story(600), story(2000), **kwargs)


def test_rows_shrink_with_the_square_of_the_longest_merge():
    assert [rows_for_span(128, span) for span in (1, 2, 3)] == [128, 32, 14]


def test_one_block_covering_the_pair_gives_what_align_gives():
    complex_sentences = story(60)
    simple = retell(complex_sentences, range(0, 60, 2))
    aligner = Aligner(AlignerConfig(measure="tfidf_cosine", null_score=0.15, paragraph_variant="none"))
    blocked = align_in_blocks(aligner, complex_sentences, simple, block_rows=30 * 9, max_cols=60)
    assert blocked == aligner.align(complex_sentences, simple).groups


@pytest.mark.slow
def test_the_cli_aligns_a_pair_past_the_block_limit_in_blocks(tmp_path):
    complex_sentences = story(900)
    simple = retell(complex_sentences, range(0, 900, 3))  # 300 x 900 = 270,000 cells > 250,000
    (tmp_path / "c.txt").write_text("\n".join(complex_sentences) + "\n")
    (tmp_path / "s.txt").write_text("\n".join(simple) + "\n")
    (tmp_path / "config.json").write_text(json.dumps({"measure": "tfidf_cosine", "null_score": 0.15, "paragraph_variant": "none"}))
    done = run_cli(
        "align", "--complex", tmp_path / "c.txt", "--simple", tmp_path / "s.txt", "--output", tmp_path / "out.jsonl",
        "--config", tmp_path / "config.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    groups = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    links = {(j, i) for group in groups for j in group["simple"] for i in group["complex"]}
    assert sum((j, 3 * j) in links for j in range(300)) >= 290
