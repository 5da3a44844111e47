"""Inference of :class:`models_ml.aligning.crf.NeuralCRF` on a pruned lattice, for long documents.

Why: the exact recurrences cost O(m K^2) time and a (K+1, K+1) transition table, with
K ~ max_span * n span states. For n = 2,000 complex sentences and spans up to 3 that is
a 6,001^2 table (144 MB) and 2,000 steps of a 36M-entry matrix-vector product: minutes
on a laptop CPU. Almost all of those states are hopeless for a given simple sentence:
its emission is far below the best one.

Here every simple sentence keeps only the null state and its ``beam`` best span states
by emission (C = beam + 1 candidates). Transitions are computed only between the
candidates of consecutive sentences, (m-1) tables of (C, C), so time is O(m C^2) and
memory O(m K) for the emissions plus O(m C^2) for the transitions. Viterbi and the
forward-backward marginals then run on that lattice exactly. With ``beam >= K`` nothing
is pruned and the results equal :meth:`NeuralCRF.decode_with_marginals` (tested); with a
smaller beam the result is the exact optimum of the pruned lattice. Pruning can only
change the answer when a state outside a sentence's top ``beam`` emissions wins through
its transitions, i.e. when transitions outweigh an emission gap; the transition FFNN's
output is bounded by the norm of its output layer, so the risk is small for beams of a
few dozen states.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from models_ml.aligning.crf import NeuralCRF
from models_ml.aligning.crf_transitions import transition_codes

__all__ = ["PrunedLattice", "decode_pruned"]


@dataclass
class PrunedLattice:
    """Viterbi path and marginals over the kept states.

    states: (m,) best state per simple sentence, as global state ids (0 = null).
    candidates: (m, C) long, the global state ids kept for each sentence; column 0 is null.
    marginals: (m, C) float, P(a_i = candidates[i, c] | S, C) on the pruned lattice; rows sum to 1.
    """

    states: list[int]
    candidates: torch.Tensor
    marginals: torch.Tensor


def _pair_transitions(
    crf: NeuralCRF, previous: torch.Tensor, current: torch.Tensor, first: torch.Tensor, last: torch.Tensor
) -> torch.Tensor:
    """T(previous[s, p], current[s, c]) for each step s: (S, P, C), looked up by :func:`transition_codes`."""
    prev_first, prev_last = first[previous][:, :, None], last[previous][:, :, None]  # (S, P, 1)
    cur_first, cur_last = first[current][:, None, :], last[current][:, None, :]  # (S, 1, C)
    prev_null, cur_null = (previous == 0)[:, :, None], (current == 0)[:, None, :]  # (S, P, 1), (S, 1, C)
    return crf.transition_lookup(transition_codes(prev_first, prev_last, prev_null, cur_first, cur_last, cur_null))


def decode_pruned(crf: NeuralCRF, sim: torch.Tensor, beam: int, allowed: torch.Tensor | None = None) -> PrunedLattice:
    """Viterbi and marginals of ``crf`` on ``sim`` (m, n), keeping null + the ``beam`` best spans per sentence.

    ``allowed`` (m, K+1) bool clamps sentences to some states (:meth:`NeuralCRF.clamped`): the others
    score -inf, so a clamped sentence's beam holds its allowed spans first.
    """
    if beam < 1:
        raise ValueError(f"beam must be >= 1, got {beam}")
    with torch.no_grad():
        emissions = crf.clamped(crf.emissions(sim), allowed)  # (m, K+1)
        m, num_states = emissions.shape
        keep = min(beam, num_states - 1)
        top = emissions[:, 1:].topk(keep, dim=1).indices + 1  # (m, keep) global ids of the best spans
        candidates = torch.cat([top.new_zeros(m, 1), top], dim=1)  # (m, C)
        kept = emissions.gather(1, candidates)  # (m, C)
        first, last = crf.state_positions(sim.shape[1])
        start = _pair_transitions(crf, candidates.new_zeros(1, 1), candidates[:1], first, last)[0, 0]  # (C,)
        # (m-1, C, C): from sentence i-1's candidates to sentence i's, looked up, so no step holds an FFNN's hidden layer
        transitions = _pair_transitions(crf, candidates[:-1], candidates[1:], first, last)
        states = _viterbi(kept, start, transitions, candidates)
        marginals = _marginals(kept, start, transitions)  # (m, C)
    return PrunedLattice(states=states, candidates=candidates, marginals=marginals)


def _viterbi(kept: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor, candidates: torch.Tensor) -> list[int]:
    best = start + kept[0]  # (C,)
    backpointers = []
    for i in range(1, kept.shape[0]):
        best, previous = (best[:, None] + transitions[i - 1]).max(dim=0)  # (C,), (C,) over previous candidates
        best = best + kept[i]
        backpointers.append(previous)
    path = [int(best.argmax())]
    for previous in reversed(backpointers):
        path.append(int(previous[path[-1]]))
    path.reverse()
    return [int(candidates[i, c]) for i, c in enumerate(path)]


def _marginals(kept: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor) -> torch.Tensor:
    m = kept.shape[0]
    alphas = [start + kept[0]]  # each (C,)
    for i in range(1, m):
        alphas.append(torch.logsumexp(alphas[-1][:, None] + transitions[i - 1], dim=0) + kept[i])
    betas = [torch.zeros_like(kept[0])]
    for i in range(m - 1, 0, -1):
        betas.append(torch.logsumexp(transitions[i - 1] + (kept[i] + betas[-1])[None, :], dim=1))
    alpha, beta = torch.stack(alphas), torch.stack(betas[::-1])  # (m, C) each
    return torch.exp(alpha + beta - torch.logsumexp(alpha[-1], dim=0))  # (m, C)
