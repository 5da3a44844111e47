"""The neural CRF checked against brute-force enumeration, in the manner of pytorch-crf's tests."""

from __future__ import annotations

import copy
import io
import itertools

import numpy as np
import pytest
import torch

from models_ml.aligning.crf import (
    CRFConfig,
    NeuralCRF,
    groups_to_states,
    span_states,
    states_to_groups,
    train_crf,
)
from models_ml.aligning.crf_transitions import TRANSITION_TABLE_MAX_CELLS, TRANSITION_TABLES_KEPT, transition_features


def perturbed_crf(max_span: int, seed: int) -> NeuralCRF:
    """A float64 CRF whose emission parameters are moved off their tidy initial values."""
    crf = NeuralCRF(CRFConfig(max_span=max_span, hidden_size=8), seed=seed).double()
    generator = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for parameter in (crf.null_emission, crf.span_weights, crf.span_bias):
            parameter.add_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return crf


def reference_score(crf: NeuralCRF, sim: torch.Tensor, sequence: tuple[int, ...]) -> torch.Tensor:
    """Psi(a) written out from the definitions, one sentence at a time, sharing no code with the CRF."""
    n = sim.shape[1]
    lengths = range(1, crf.config.max_span + 1)
    spans = [None] + [(start, start + length) for length in lengths for start in range(n - length + 1)]
    total = torch.zeros((), dtype=torch.float64)
    previous = 0  # the virtual a_0 = null
    for i, state in enumerate(sequence):
        if state == 0:
            total = total + crf.null_emission
        else:
            start, end = spans[state]
            values = [float(sim[i, j]) for j in range(start, end)]
            weights, bias = crf.span_weights[end - start - 1], crf.span_bias[end - start - 1]
            total = total + weights[0] * (sum(values) / len(values)) + weights[1] * min(values) + bias
        if state == 0 or previous == 0:
            distance = 0
        else:
            (p_start, p_end), (c_start, c_end) = spans[previous], spans[state]
            distance = max(0, c_start - (p_end - 1), p_start - (c_end - 1))
        features = torch.tensor(
            [distance, state == 0 and previous != 0, state != 0 and previous == 0, state == 0 and previous == 0],
            dtype=torch.float64,
        )
        total = total + crf.transition_out(torch.tanh(crf.transition_hidden(features)))[0]
        previous = state
    return total


def brute_force(crf: NeuralCRF, sim: torch.Tensor) -> tuple[list[tuple[int, ...]], torch.Tensor]:
    num_states = len(crf.states(sim.shape[1])[0]) + 1
    sequences = list(itertools.product(range(num_states), repeat=sim.shape[0]))
    with torch.no_grad():
        scores = torch.stack([reference_score(crf, sim, sequence) for sequence in sequences])
    return sequences, scores


@pytest.fixture(params=[1, 2], ids=["max_span_1", "max_span_2"])
def tiny_case(request: pytest.FixtureRequest) -> tuple[NeuralCRF, torch.Tensor, list[tuple[int, ...]], torch.Tensor]:
    crf = perturbed_crf(request.param, seed=request.param)
    sim = torch.rand(3, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    sequences, scores = brute_force(crf, sim)
    return crf, sim, sequences, scores


def test_span_states_put_single_sentences_first_then_longer_spans() -> None:
    starts, ends = span_states(4, 3)
    assert list(zip(starts.tolist(), ends.tolist())) == [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 4),
        (0, 2),
        (1, 3),
        (2, 4),
        (0, 3),
        (1, 4),
    ]


def test_max_span_one_gives_the_papers_label_set() -> None:
    starts, ends = NeuralCRF(CRFConfig(max_span=1)).states(5)
    assert starts.tolist() == [0, 1, 2, 3, 4] and (ends - starts).tolist() == [1] * 5


def test_spans_never_exceed_the_number_of_complex_sentences() -> None:
    starts, ends = span_states(2, 3)
    assert len(starts) == 3 and ends.max() == 2


def test_transition_features_equal_the_papers_for_single_sentences() -> None:
    starts, ends = (torch.as_tensor(a) for a in span_states(4, 1))
    features = transition_features(starts, ends)  # (5, 5, 4)
    for previous, current in itertools.product(range(5), repeat=2):
        both_aligned = previous != 0 and current != 0
        expected = [
            abs(current - previous) if both_aligned else 0,
            current == 0 and previous != 0,
            current != 0 and previous == 0,
            current == 0 and previous == 0,
        ]
        assert features[previous, current].tolist() == [float(x) for x in expected]


def test_transition_distance_is_zero_for_overlapping_spans_and_the_gap_otherwise() -> None:
    starts, ends = span_states(5, 2)
    state = {(int(s), int(e)): k + 1 for k, (s, e) in enumerate(zip(starts, ends))}
    features = transition_features(torch.as_tensor(starts), torch.as_tensor(ends))
    assert features[state[(0, 2)], state[(1, 3)], 0] == 0
    assert features[state[(0, 2)], state[(2, 3)], 0] == 1
    assert features[state[(3, 5)], state[(0, 1)], 0] == 3


def test_log_partition_matches_brute_force(tiny_case) -> None:
    crf, sim, _, scores = tiny_case
    assert torch.allclose(crf.log_partition(sim), torch.logsumexp(scores, dim=0), atol=1e-9)


def test_forward_is_gold_score_minus_log_partition(tiny_case) -> None:
    crf, sim, sequences, scores = tiny_case
    gold = sequences[len(sequences) // 2 + 1]
    expected = reference_score(crf, sim, gold) - torch.logsumexp(scores, dim=0)
    assert torch.allclose(crf(sim, list(gold)), expected, atol=1e-9)
    assert torch.allclose(crf.score(sim, list(gold)), reference_score(crf, sim, gold), atol=1e-9)


def test_marginals_match_brute_force(tiny_case) -> None:
    crf, sim, sequences, scores = tiny_case
    probabilities = torch.softmax(scores, dim=0)
    expected = torch.zeros(3, len(crf.states(3)[0]) + 1, dtype=torch.float64)
    for sequence, probability in zip(sequences, probabilities):
        for i, state in enumerate(sequence):
            expected[i, state] += probability
    marginals = crf.marginals(sim)
    assert torch.allclose(marginals, expected, atol=1e-9)
    assert torch.allclose(marginals.sum(dim=1), torch.ones(3, dtype=torch.float64))


def test_decode_matches_brute_force_argmax(tiny_case) -> None:
    crf, sim, sequences, scores = tiny_case
    assert crf.decode(sim) == list(sequences[int(scores.argmax())])


def test_gradients_reach_every_parameter() -> None:
    crf = NeuralCRF(CRFConfig(max_span=3, hidden_size=4), seed=0)
    sim = torch.rand(5, 4, generator=torch.Generator().manual_seed(1))
    (-crf(sim, [1, 0, 5, 8, 4])).backward()
    for name, parameter in crf.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_parameters_depend_only_on_the_seed() -> None:
    first, second, other = NeuralCRF(seed=3), NeuralCRF(seed=3), NeuralCRF(seed=4)
    assert torch.equal(first.transition_hidden.weight, second.transition_hidden.weight)
    assert not torch.equal(first.transition_hidden.weight, other.transition_hidden.weight)


def synthetic_example(seed: int, max_span: int = 3) -> tuple[torch.Tensor, list[int]]:
    """A monotonic alignment with one 2:1 merge and one unaligned simple sentence, over noisy similarities."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 12))
    merge_at = int(rng.integers(1, n - 2))
    groups: list[tuple[list[int], list[int]]] = []
    simple = 0
    complex_index = 0
    null_after = int(rng.integers(0, n - 2))
    while complex_index < n:
        width = 2 if complex_index == merge_at else 1
        groups.append((list(range(complex_index, complex_index + width)), [simple]))
        simple += 1
        if complex_index == null_after:
            simple += 1  # an added simple sentence aligned to nothing
        complex_index += width
    m = simple
    sim = rng.uniform(0.0, 0.3, size=(m, n))
    for complex_indices, (row,) in groups:
        low, high = (0.75, 0.95) if len(complex_indices) == 1 else (0.55, 0.7)
        sim[row, complex_indices] = rng.uniform(low, high, size=len(complex_indices))
    return torch.tensor(sim, dtype=torch.float32), groups_to_states(groups, m, n, max_span)


@pytest.mark.slow
def test_training_raises_likelihood_and_decodes_held_out_gold() -> None:
    crf = NeuralCRF(CRFConfig(max_span=3, hidden_size=16), seed=0)
    examples = [synthetic_example(seed) for seed in range(12)]
    held_out = [synthetic_example(seed) for seed in (1000, 1001, 1002)]
    assert not any(crf.decode(sim) == gold for sim, gold in held_out)  # the untrained model misses the merges
    with torch.no_grad():
        before = sum(float(crf(sim, gold)) for sim, gold in examples)
    history = train_crf(crf, examples, epochs=12, lr=0.05, seed=0, device="cpu")
    with torch.no_grad():
        after = sum(float(crf(sim, gold)) for sim, gold in examples)
    assert after > before + 10
    assert history[-1] > history[0]
    assert all(crf.decode(sim) == gold for sim, gold in held_out)


@pytest.mark.slow
def test_training_is_deterministic_given_seed() -> None:
    examples = [synthetic_example(seed) for seed in range(3)]
    runs = [train_crf(NeuralCRF(seed=0), examples, epochs=2, lr=0.05, seed=5, device="cpu") for _ in range(2)]
    assert runs[0] == runs[1]


def test_groups_from_split_merge_and_fusion() -> None:
    starts, ends = span_states(7, 3)
    state = {(int(s), int(e)): k + 1 for k, (s, e) in enumerate(zip(starts, ends))}
    decoded = [
        state[(0, 1)],  # s0 - c0: 1:1
        state[(1, 2)],
        state[(1, 2)],  # s1, s2 - c1: 1:n split
        state[(2, 4)],  # s3 - c2 c3: n:1 merge
        0,  # s4 aligned to nothing
        state[(4, 6)],
        state[(5, 7)],  # s5, s6 - c4 c5 c6: n:m fusion through overlapping spans
    ]
    assert states_to_groups(decoded, starts, ends) == [
        ([0], [0]),
        ([1], [1, 2]),
        ([2, 3], [3]),
        ([4, 5, 6], [5, 6]),
    ]


def test_neighbours_on_adjacent_but_disjoint_spans_form_separate_groups() -> None:
    crf = NeuralCRF(CRFConfig(max_span=2))
    assert crf.groups([1, 2, 0, 2], n=3) == [([0], [0]), ([1], [1]), ([1], [3])]


def test_gold_groups_round_trip_through_states() -> None:
    groups = [([0], [0]), ([1], [1, 2]), ([2, 3], [3]), ([4, 5], [5, 6])]
    crf = NeuralCRF(CRFConfig(max_span=3))
    states = crf.gold_states(groups, m=8, n=7)
    assert states[4] == 0 and states[7] == 0
    assert crf.groups(states, n=7) == groups


def test_gold_groups_wider_than_max_span_get_the_best_covering_span() -> None:
    starts, ends = span_states(6, 2)
    states = groups_to_states([([1, 2, 3, 4], [0]), ([0, 2], [1]), ([3, 5], [2])], m=3, n=6, max_span=2)
    spans = [(int(starts[k - 1]), int(ends[k - 1])) for k in states]
    assert spans == [(1, 3), (0, 1), (3, 4)]


def test_a_simple_sentence_in_two_groups_targets_their_union() -> None:
    states = groups_to_states([([0], [0]), ([1], [0])], m=1, n=3, max_span=2)
    starts, ends = span_states(3, 2)
    assert (int(starts[states[0] - 1]), int(ends[states[0] - 1])) == (0, 2)


@pytest.mark.parametrize(
    ("sim", "gold", "message"),
    [
        (torch.zeros(0, 3), [], "needs at least one"),
        (torch.zeros(3), [0, 0, 0], "2-D"),
        (torch.zeros(2, 3, 1), [0, 0], "2-D"),
        (np.zeros((2, 3)), [0, 0], "torch.Tensor"),
        (torch.zeros(2, 3, dtype=torch.long), [0, 0], "floats"),
        (torch.full((2, 3), float("nan")), [0, 0], "NaN"),
        (torch.zeros(2, 3), [0, 0, 0], "3 states for 2"),
        (torch.zeros(2, 3), [0, 6], "0..5"),
        (torch.zeros(2, 3), [-1, 0], "0..5"),
    ],
)
def test_bad_input_raises_value_error(sim: object, gold: list[int], message: str) -> None:
    crf = NeuralCRF(CRFConfig(max_span=2))
    with pytest.raises(ValueError, match=message):
        crf(sim, gold)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call",
    [
        lambda: CRFConfig(max_span=0),
        lambda: CRFConfig(hidden_size=0),
        lambda: groups_to_states([([5], [0])], m=2, n=3, max_span=2),
        lambda: groups_to_states([([0], [2])], m=2, n=3, max_span=2),
        lambda: states_to_groups([0, 4], *span_states(3, 1)),
        lambda: train_crf(NeuralCRF(), [], epochs=1, lr=0.1, seed=0, device="cpu"),
        lambda: NeuralCRF().decode(torch.zeros(0, 0)),
    ],
    ids=["max_span", "hidden_size", "complex_index", "simple_index", "decoded_state", "no_examples", "empty_decode"],
)
def test_bad_arguments_raise_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_looked_up_transitions_and_joint_decoding_match_the_plain_computation() -> None:
    """The transitions looked up by code equal the FFNN run over every pair's features (897 states, gaps up to 299, and
    the three null cases); decode_with_marginals equals decode + marginals."""
    crf = NeuralCRF(CRFConfig(max_span=3), seed=3)
    sim = torch.rand(7, 300, generator=torch.Generator().manual_seed(1)) * 4  # (m, n): 897 states
    starts, ends = (torch.as_tensor(a) for a in crf.states(300))
    with torch.no_grad():
        features = transition_features(starts, ends).to(crf.null_emission.dtype)  # (K+1, K+1, 4)
        unchunked = crf.transition_out(torch.tanh(crf.transition_hidden(features))).squeeze(-1)  # (K+1, K+1)
        assert torch.allclose(crf.transitions(300), unchunked, atol=1e-6)
        states, marginals = crf.decode_with_marginals(sim)
        assert states == crf.decode(sim)
        assert torch.allclose(marginals, crf.marginals(sim), atol=1e-5)


def test_decoding_reuses_a_transition_table_only_while_the_weights_are_unchanged() -> None:
    """Without gradients a table of n complex sentences is built once and kept; an optimiser step, loading other
    weights and a change of dtype each give a table of the new weights, and with gradients the table is built anew
    with its graph."""
    crf = NeuralCRF(CRFConfig(max_span=2, hidden_size=4), seed=5)
    with torch.no_grad():
        first = crf.transitions(6)
        assert crf.transitions(6) is first  # kept
        assert crf.transitions(7) is not first and crf.transitions(7).shape == (14, 14)  # 13 spans and null
    with_graph = crf.transitions(6)
    assert with_graph.requires_grad and with_graph is not first
    assert torch.equal(with_graph.detach(), first)

    optimizer = torch.optim.SGD(crf.parameters(), lr=0.5)
    (-with_graph.sum()).backward()
    optimizer.step()  # changes the transition weights in place
    with torch.no_grad():
        stepped = crf.transitions(6)
        assert not torch.equal(stepped, first)
        assert torch.equal(stepped, crf._transition_table(6))

    other = NeuralCRF(CRFConfig(max_span=2, hidden_size=4), seed=6)
    crf.load_state_dict(other.state_dict())
    with torch.no_grad():
        assert torch.equal(crf.transitions(6), other.transitions(6))
        assert crf.double().transitions(6).dtype == torch.float64


def test_decoding_keeps_a_bounded_number_of_small_transition_tables() -> None:
    """The most recently used TRANSITION_TABLES_KEPT tables are kept, none larger than TRANSITION_TABLE_MAX_CELLS."""
    crf = NeuralCRF(CRFConfig(max_span=3, hidden_size=4), seed=1)
    with torch.no_grad():
        for n in range(1, TRANSITION_TABLES_KEPT + 11):
            crf.transitions(n)
        crf.transitions(11)  # used again: now the most recent
        assert crf._transition_tables.kept() == [*range(12, TRANSITION_TABLES_KEPT + 11), 11]  # the oldest ten went
        big = crf.transitions(100)  # 298 states: 88,804 cells
        assert big.numel() > TRANSITION_TABLE_MAX_CELLS and 100 not in crf._transition_tables.kept()


def test_a_crf_with_kept_transition_tables_copies_and_saves_whole_and_the_copy_keeps_none() -> None:
    """The tables hold their weights' storages; a deep copy (an aligner's twin) and ``torch.save`` of the whole module
    leave them out, and the copy builds its own."""
    crf = NeuralCRF(CRFConfig(max_span=2, hidden_size=4), seed=2)
    with torch.no_grad():
        table = crf.transitions(5)
    twin = copy.deepcopy(crf)
    buffer = io.BytesIO()
    torch.save(crf, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    for copied in (twin, loaded):
        assert copied._transition_tables.kept() == []
        with torch.no_grad():
            assert torch.equal(copied.transitions(5), table)
