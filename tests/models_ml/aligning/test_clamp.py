"""Clamped decoding checked against brute-force enumeration: Viterbi, marginals and log Z given known states.

The reference enumerates every state sequence whose known sentences keep an allowed state and
scores it with the CRF's definition written out (``reference_score`` of test_crf), sharing no
code with the recurrences. Then the aligner: known links kept exactly, the rest decoded given
them, the per-pair refit, and the pruned lattice under clamps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.clamp import allowed_states, fixed_check
from models_ml.aligning.crf import CRFConfig, groups_from_links, span_states, states_to_groups
from models_ml.aligning.crf_pruned import decode_pruned
from models_ml.aligning.refit import closeness, refit_blocks
from tests.models_ml.aligning.test_crf import perturbed_crf, reference_score

FIXED_CASES = [
    ({1: [2]}, "one known link in the middle"),
    ({0: [], 2: [0]}, "a known unaligned sentence and a known link"),
    ({1: [1, 2]}, "a sentence known to link two complex sentences"),
]


def _clamped_brute_force(crf, sim, allowed: np.ndarray):
    num_states = len(crf.states(sim.shape[1])[0]) + 1
    sequences = [
        sequence
        for sequence in itertools.product(range(num_states), repeat=sim.shape[0])
        if all(allowed[i, state] for i, state in enumerate(sequence))
    ]
    with torch.no_grad():
        scores = torch.stack([reference_score(crf, sim, sequence) for sequence in sequences])
    return sequences, scores


@pytest.mark.parametrize("max_span", [1, 2])
@pytest.mark.parametrize(("fixed", "case"), FIXED_CASES, ids=[case for _, case in FIXED_CASES])
def test_clamped_viterbi_marginals_and_partition_match_brute_force(max_span, fixed, case) -> None:
    crf = perturbed_crf(max_span, seed=3 + max_span)
    sim = torch.rand(4, 3, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    allowed = allowed_states(fixed, 4, 3, max_span)  # (4, K+1)
    sequences, scores = _clamped_brute_force(crf, sim, allowed)
    mask = torch.as_tensor(allowed)
    assert crf.decode(sim, mask) == list(sequences[int(scores.argmax())])
    assert torch.allclose(crf.log_partition(sim, mask), torch.logsumexp(scores, dim=0), atol=1e-9)
    probabilities = torch.softmax(scores, dim=0)
    expected = torch.zeros(4, allowed.shape[1], dtype=torch.float64)
    for sequence, probability in zip(sequences, probabilities):
        for i, state in enumerate(sequence):
            expected[i, state] += probability
    marginals = crf.marginals(sim, mask)
    assert torch.allclose(marginals, expected, atol=1e-9), case
    states, joint = crf.decode_with_marginals(sim, mask)
    assert states == crf.decode(sim, mask) and torch.allclose(joint, marginals, atol=1e-9)
    assert float(marginals.detach()[~mask].abs().max()) == 0.0  # a clamped sentence never takes a state outside its links


def test_allowed_states_are_the_spans_inside_the_links() -> None:
    starts, ends = span_states(4, 2)
    allowed = allowed_states({0: [1, 2], 1: [], 2: [3]}, 3, 4, 2)
    spans = lambda row: [(int(starts[k - 1]), int(ends[k - 1])) for k in np.flatnonzero(row) if k]  # noqa: E731 - a reader
    assert spans(allowed[0]) == [(1, 2), (2, 3), (1, 3)] and not allowed[0, 0]
    assert allowed[1].tolist() == [True] + [False] * len(starts)  # known unaligned: null only
    assert spans(allowed[2]) == [(3, 4)]
    assert allowed_states({0: [9]}, 1, 4, 2)[0].tolist() == [True] + [False] * len(starts)  # links outside this block: null here


def test_clamped_decoding_refuses_a_sentence_with_no_allowed_state() -> None:
    crf = perturbed_crf(1, seed=1)
    sim = torch.rand(2, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"simple sentence\(s\) \[1\] allow no state"):
        crf.decode(sim, torch.tensor([[True, True, True], [False, False, False]]))
    with pytest.raises(ValueError, match="allowed has shape"):
        crf.decode(sim, torch.ones(3, 3, dtype=torch.bool))


@pytest.mark.parametrize(
    ("fixed", "message"), [({5: [0]}, "known simple sentence 5 is outside 0..3"), ({1: [7]}, r"complex sentence\(s\) \[7\]")]
)
def test_fixed_links_outside_the_document_are_refused_by_name(fixed, message) -> None:
    with pytest.raises(ValueError, match=message):
        fixed_check(fixed, 4, 3)


def test_groups_from_links_follow_the_state_rule() -> None:
    starts, ends = span_states(5, 2)
    state = {(int(s), int(e)): k + 1 for k, (s, e) in enumerate(zip(starts, ends))}
    states = [state[(0, 1)], state[(0, 1)], 0, state[(1, 3)], state[(2, 3)], state[(4, 5)]]
    links = [() if s == 0 else tuple(range(int(starts[s - 1]), int(ends[s - 1]))) for s in states]
    assert groups_from_links(links) == states_to_groups(states, starts, ends) == [([0], [0, 1]), ([1, 2], [3, 4]), ([4], [5])]


def _aligner(max_span: int = 1) -> Aligner:
    config = AlignerConfig(measure="jaccard", paragraph_variant="none", crf=CRFConfig(max_span=max_span))
    aligner = Aligner(config, seed=0)
    with torch.no_grad():  # a monotone prior, so known links pull their neighbours along
        aligner.crf.transition_out.weight.fill_(0.0)
        aligner.crf.transition_out.bias.fill_(0.0)
        aligner.crf.transition_hidden.weight.zero_()
        aligner.crf.transition_hidden.weight[:, 0] = 1.0  # every hidden unit reads the distance g1
        aligner.crf.transition_hidden.bias.fill_(-1.5)
        aligner.crf.transition_out.weight.fill_(-1.0)
    return aligner


def test_a_known_link_moves_its_neighbours_and_is_kept_exactly() -> None:
    """Flat similarities: alone, the CRF keeps simple 2 near the start; with simple 1 known to go to complex 3, it follows."""
    sim = np.full((4, 6), 0.6, dtype=np.float32)
    sim[0, 0] = 0.9
    aligner = _aligner()
    plain = aligner.align(["c"] * 6, ["s"] * 4, similarity=sim)
    known = aligner.align(["c"] * 6, ["s"] * 4, similarity=sim, fixed={1: [3], 3: []})
    assert plain.chosen_complex[2] not in ((3,), (4,))
    assert known.chosen_complex[2] in ((3,), (4,))  # next to its known neighbour: the monotone prior
    assert known.chosen_complex[1] == (3,) and known.chosen_complex[3] == ()
    assert known.state_marginals[1] == known.state_marginals[3] == 1.0
    assert np.allclose(known.pair_marginals[1], [0, 0, 0, 1, 0, 0]) and not known.pair_marginals[3].any()
    assert all(3 not in group.simple for group in known.groups)
    assert any(group.simple[:1] == (1,) or 1 in group.simple for group in known.groups if 3 in group.complex)


def test_a_known_merge_is_kept_whole_even_when_the_crf_has_single_sentence_states() -> None:
    sim = np.random.default_rng(0).random((3, 5)).astype(np.float32)
    result = _aligner(max_span=1).align(["c"] * 5, ["s"] * 3, similarity=sim, fixed={1: [1, 2]})
    assert result.chosen_complex[1] == (1, 2)
    assert any(group.complex[:2] == (1, 2) or set(group.complex) >= {1, 2} for group in result.groups if 1 in group.simple)


def test_clamped_pruned_lattice_equals_the_exact_clamped_crf_when_nothing_is_pruned() -> None:
    crf = perturbed_crf(2, seed=5).float()
    sim = torch.rand(5, 4, generator=torch.Generator().manual_seed(2))
    allowed = torch.as_tensor(allowed_states({1: [2], 3: []}, 5, 4, 2))
    lattice = decode_pruned(crf, sim, beam=100, allowed=allowed)
    states, marginals = crf.decode_with_marginals(sim, allowed)
    assert lattice.states == states
    assert torch.allclose(lattice.marginals, marginals.gather(1, lattice.candidates), atol=1e-5)


def test_the_refit_learns_that_this_pair_leaves_sentences_unaligned() -> None:
    """Every known sentence is unaligned although the scores say otherwise: the unknown ones become less sure of a link."""
    sim = np.full((12, 12), 0.55, dtype=np.float32)
    aligner = _aligner()
    fixed = {i: [] for i in range(10)}
    plain = aligner.align(["c"] * 12, ["s"] * 12, similarity=sim, fixed=fixed)
    refitted = aligner.align(["c"] * 12, ["s"] * 12, similarity=sim, fixed=fixed, refit=True)
    linked = lambda result: result.pair_marginals[10:].sum(axis=1)  # noqa: E731 - P(aligned) of the unknown sentences
    assert (linked(refitted) < linked(plain) - 0.1).all()
    assert [refitted.chosen_complex[i] for i in range(10)] == [()] * 10  # the known stay as they are


def test_the_refit_is_held_near_the_model_by_its_prior() -> None:
    aligner = _aligner()
    sim = np.full((4, 4), 0.55, dtype=np.float32)
    blocks = [(np.arange(4), np.arange(4), sim, allowed_states({0: []}, 4, 4, 1))]
    weak = refit_blocks(aligner, blocks, (4, 4), prior=0.01)[0][2]
    strong = refit_blocks(aligner, blocks, (4, 4), prior=100.0)[0][2]
    assert np.abs(strong - sim).max() < np.abs(weak - sim).max()
    assert np.abs(strong - sim).max() < 0.05


def test_closeness_is_zero_on_the_pairs_diagonal() -> None:
    near = closeness(np.arange(3), np.arange(5), (3, 5))
    assert near[0, 0] == near[2, 4] == 0.0 and near[0, 4] == -1.0


def test_the_refit_gradient_from_marginals_equals_finite_differences() -> None:
    from models_ml.aligning.refit import _objective

    crf = perturbed_crf(2, seed=9).float()
    sim = torch.rand(5, 4, generator=torch.Generator().manual_seed(4))
    near = torch.as_tensor(closeness(np.arange(5), np.arange(4), (5, 4)))
    known = [(sim, near, torch.as_tensor(allowed_states({0: [0], 2: [], 3: [2, 3]}, 5, 4, 2)), crf.transitions(4).detach())]
    theta = np.array([0.3, -0.7])
    value, gradient = _objective(theta, crf, known, 0.5)
    for axis in (0, 1):
        step = np.zeros(2)
        step[axis] = 1e-2
        numeric = (_objective(theta + step, crf, known, 0.5)[0] - _objective(theta - step, crf, known, 0.5)[0]) / 2e-2
        assert gradient[axis] == pytest.approx(numeric, rel=2e-2, abs=2e-3)
    assert value > 0  # -log of a probability, plus the prior
