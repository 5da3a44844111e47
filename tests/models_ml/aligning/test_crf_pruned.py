"""Pruned-lattice inference: equal to the exact recurrences when nothing is pruned, bounded when it is."""

from __future__ import annotations

import pytest
import torch

from models_ml.aligning.crf import CRFConfig, NeuralCRF
from models_ml.aligning.crf_pruned import decode_pruned


def _crf(seed: int = 3) -> NeuralCRF:
    crf = NeuralCRF(CRFConfig(max_span=3, hidden_size=8), seed=seed)
    with torch.no_grad():  # random transitions and span parameters, so pruning could matter
        crf.span_bias.copy_(torch.tensor([0.0, -0.3, -0.6]))
        crf.null_emission.fill_(0.2)
    return crf


@pytest.mark.parametrize(("m", "n"), [(1, 1), (4, 3), (6, 7)])
def test_full_beam_equals_exact_viterbi_and_marginals(m: int, n: int) -> None:
    crf = _crf()
    sim = torch.rand(m, n, generator=torch.Generator().manual_seed(m * 10 + n)) * 3
    states, marginals = crf.decode_with_marginals(sim)  # (m,), (m, K+1)
    lattice = decode_pruned(crf, sim, beam=10_000)
    assert lattice.states == states
    dense_from_lattice = torch.zeros_like(marginals).scatter_(1, lattice.candidates, lattice.marginals)
    assert torch.allclose(dense_from_lattice, marginals, atol=1e-5)


def test_pruned_marginals_are_distributions_over_null_and_the_beam() -> None:
    sim = torch.rand(30, 40, generator=torch.Generator().manual_seed(0)) * 5
    lattice = decode_pruned(_crf(), sim, beam=5)
    assert lattice.candidates.shape == (30, 6) and bool((lattice.candidates[:, 0] == 0).all())
    assert torch.allclose(lattice.marginals.sum(dim=1), torch.ones(30), atol=1e-4)
    chosen = [int(lattice.candidates[i].tolist().index(s)) for i, s in enumerate(lattice.states)]
    assert len(chosen) == 30  # every Viterbi state is one of the kept candidates


def test_pruned_decoding_follows_a_strong_diagonal() -> None:
    crf = NeuralCRF(CRFConfig(max_span=3), seed=0)
    with torch.no_grad():
        crf.transition_out.weight.zero_()
        crf.transition_out.bias.zero_()
        crf.span_bias[1:] = -5.0
    sim = torch.eye(300) * 10  # (300, 300): 897 span states, beam 8
    lattice = decode_pruned(crf, sim, beam=8)
    assert lattice.states == list(range(1, 301))


def test_beam_must_be_positive() -> None:
    with pytest.raises(ValueError, match="beam"):
        decode_pruned(_crf(), torch.rand(2, 2), beam=0)
