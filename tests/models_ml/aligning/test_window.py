"""Windowed clamped decoding (what the live refresh decodes): a window that covers its block is the full clamped
decoding, a window joins the stored path, and however many labels there are the rows decoded stay within the budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.crf import CRFConfig
from models_ml.aligning.window import CONTEXT_ROWS, ROW_BUDGET, decode_windows
from models_ml.data.checkpoint import DEFAULT_MODEL_DIR


def _shipped(**settings) -> Aligner:
    aligner = Aligner.load(DEFAULT_MODEL_DIR)
    aligner.config = AlignerConfig.from_dict({**aligner.config.to_dict(), **settings})
    return aligner


def _spans() -> Aligner:
    """An untrained CRF with spans of two and a monotone prior (as test_clamp's), on cosine-like scores."""
    aligner = Aligner(AlignerConfig(measure="jaccard", paragraph_variant="newsela", crf=CRFConfig(max_span=2)), seed=0)
    with torch.no_grad():
        aligner.crf.transition_hidden.weight.zero_()
        aligner.crf.transition_hidden.weight[:, 0] = 1.0  # every hidden unit reads the distance g1
        aligner.crf.transition_hidden.bias.fill_(-1.5)
        aligner.crf.transition_out.weight.fill_(-1.0)
    return aligner


def _pair(m: int, n: int, seed: int, *, logits: bool, paragraph: int = 0):
    """(m, n) scores with a noisy diagonal, and each side's paragraphs (of ``paragraph`` sentences; 0: one paragraph)."""
    rng = np.random.default_rng(seed)
    diagonal = np.abs(np.arange(n)[None, :] - np.arange(m)[:, None] * n / m) < 1.0  # (m, n)
    high, low = (3.0, -6.0) if logits else (0.8, 0.2)
    sim = np.where(diagonal, high, low) + rng.normal(0, 1.5 if logits else 0.15, (m, n))
    sides = [np.arange(count) // paragraph if paragraph else np.zeros(count, dtype=int) for count in (m, n)]
    return sim.astype(np.float32), sides[0], sides[1]


def _decode(aligner, sim, simple_par, complex_par, fixed, **options):
    plan = aligner.blocks(sim, simple_par, complex_par)
    stored = aligner.align([""] * sim.shape[1], [""] * sim.shape[0], complex_par, simple_par, similarity=sim).chosen_complex
    centres = sorted(fixed, reverse=True)
    return decode_windows(aligner, plan, sim, fixed, stored, centres, **options), stored


@pytest.mark.parametrize(
    "aligner, logits",
    [(_shipped(), True), (_shipped(dense_state_limit=8, beam=4), True), (_spans(), False)],
    ids=["shipped model", "pruned lattice", "spans of two"],
)
def test_windows_that_cover_their_blocks_are_the_full_clamped_decoding(aligner, logits):
    sim, simple_par, complex_par = _pair(36, 30, seed=3, logits=logits, paragraph=6)
    fixed = {2: (5,), 9: (), 14: (12, 13), 27: (20,)}  # a moved link, not aligned, a merge, another moved link
    windowed, _ = _decode(aligner, sim, simple_par, complex_par, fixed, context=100, budget=10_000)
    full = aligner.align([""] * 30, [""] * 36, complex_par, simple_par, similarity=sim, fixed=fixed)

    rows = [j for j in windowed.decoded if j not in fixed]
    assert rows == [j for j in range(36) if j not in fixed] and windowed.next_centre is None and not windowed.deferred
    # Marginals to float32's accuracy over a chain of 36 (the full decoding's own marginals exceed 1 by 1e-4 here).
    for j in rows:
        assert windowed.result.chosen_complex[j] == full.chosen_complex[j], j
        assert windowed.result.state_marginals[j] == pytest.approx(full.state_marginals[j], abs=1e-3)
        assert windowed.result.pair_marginals[j] == pytest.approx(full.pair_marginals[j], abs=1e-3)
    touching = lambda groups: sorted(  # noqa: E731 - the groups a decoded row is in, comparable
        (g.complex, g.simple, g.label, g.score) for g in groups if set(g.simple) & set(rows)
    )
    windowed_groups, full_groups = touching(windowed.result.groups), touching(full.groups)
    assert [group[:3] for group in windowed_groups] == [group[:3] for group in full_groups]
    assert [group[3] for group in windowed_groups] == pytest.approx([group[3] for group in full_groups], abs=1e-3)


def test_a_label_that_agrees_with_the_stored_path_changes_no_link_and_the_window_is_its_context():
    aligner = _shipped()
    sim, simple_par, complex_par = _pair(120, 120, seed=5, logits=True)  # one block, wider than a band
    stored = aligner.align([""] * 120, [""] * 120, similarity=sim).chosen_complex
    fixed = {60: stored[60]} if stored[60] else {60: ()}
    windowed, _ = _decode(aligner, sim, simple_par, complex_par, fixed)
    rows = [j for j in windowed.decoded if j not in fixed]
    assert rows == [j for j in range(60 - CONTEXT_ROWS, 60 + CONTEXT_ROWS + 1) if j != 60]
    assert windowed.rows_decoded == len(rows) + 2 * 2 + 1  # two pieces, each with its two clamps, and a separator
    assert [windowed.result.chosen_complex[j] for j in rows] == [stored[j] for j in rows]


def test_however_many_labels_the_rows_decoded_stay_within_the_budget_and_the_rest_follows_in_later_calls():
    aligner = _shipped()
    sim, simple_par, complex_par = _pair(120, 120, seed=7, logits=True)
    fixed = {j: (min(119, j + 1),) for j in range(3, 120, 4)}  # 30 labels spread over the pair
    centres = sorted(fixed, reverse=True)
    plan = aligner.blocks(sim, simple_par, complex_par)
    stored = aligner.align([""] * 120, [""] * 120, similarity=sim).chosen_complex
    reach = {j for centre in fixed for j in range(centre - CONTEXT_ROWS, centre + CONTEXT_ROWS + 1) if 0 <= j < 120} - set(fixed)

    covered: set[int] = set()
    start: int | None = 0
    calls = 0
    while start is not None:
        windowed = decode_windows(aligner, plan, sim, fixed, stored, centres, start=start)
        assert windowed.rows_decoded <= ROW_BUDGET
        assert not set(windowed.decoded) & set(windowed.deferred)
        covered |= set(windowed.decoded) - set(fixed)
        start, calls = windowed.next_centre, calls + 1
    assert calls > 1 and covered == reach
