"""The neural CRF sentence aligner of Jiang et al. (2020), sections 2.2-2.3, in the manner of pytorch-crf.

Each simple sentence s_i (i = 0..m-1) takes one state a_i and a sequence scores
``Psi(a) = sum_i emission(i, a_i) + T(a_{i-1}, a_i)``; ``P(a | S, C) = exp(Psi(a)) / Z``.

States. State 0 is "aligned to nothing" (null). States 1..K are *spans* of
consecutive complex sentences ``[start, end)`` of length 1..max_span, ordered
length-major then by start, so states 1..n are always the single complex
sentences 0..n-1 and, with ``max_span=1``, the label set is exactly the paper's
{0, 1..n}. Span states let the CRF itself produce n:1 merges, as the authors'
released code does; 1:n splits come from consecutive simple sentences choosing
the same or overlapping spans (see :func:`states_to_groups`).

Emission of a span for simple sentence i: ``w_L . [mean, min](sim[i, span]) + b_L``
with a learned weight pair and bias per span length L. The mean measures how
much of the simple sentence the span covers; the min keeps a span from being
padded with an unrelated neighbour. Initialised to ``w = (1, 0), b = 0``, so an
untrained single-sentence state scores exactly ``sim`` as in the paper.
Emission of the null state: a learned scalar. The paper does not define it; a
scalar is a learned similarity threshold: null wins a sentence when no span's
emission beats it.

Transition ``T(a_{i-1}, a_i) = FFNN([g1, g2, g3, g4])`` (2 layers, tanh):
g1 is the distance between the two spans as sets of positions
(``max(0, start_i - last_{i-1}, start_{i-1} - last_i)``, with last = end - 1),
which is the paper's ``|a_i - a_{i-1}|`` for single sentences and 0 for
overlapping spans. g1 is 0 whenever either state is null: g2..g4 carry the null
transitions, and remembering the last non-null position would break the
first-order Markov property. The first sentence transitions from a virtual
``a_0 = null`` (no parameter depends on n, so one model serves any document).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from models_ml.aligning.crf_config import CRFConfig
from models_ml.aligning.crf_transitions import NULL_CODES, TransitionTables

Group = tuple[list[int], list[int]]  # (complex sentence indices, simple sentence indices)


def span_states(n: int, max_span: int) -> tuple[np.ndarray, np.ndarray]:
    """Spans ``[start, end)`` over n complex sentences: ``starts (K,), ends (K,)``, length-major.

    State k (1-based, 0 is null) is span ``[starts[k-1], ends[k-1])``.
    """
    if n < 1:
        raise ValueError(f"need at least one complex sentence, got n={n}")
    if max_span < 1:
        raise ValueError(f"max_span must be >= 1, got {max_span}")
    starts = [start for length in range(1, min(max_span, n) + 1) for start in range(n - length + 1)]
    ends = [start + length for length in range(1, min(max_span, n) + 1) for start in range(n - length + 1)]
    return np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


def states_to_groups(states: Sequence[int], starts: np.ndarray, ends: np.ndarray) -> list[Group]:
    """Turn one state per simple sentence into alignment groups, dropping null (see :func:`groups_from_links`)."""
    num_states = len(starts)
    links = []
    for index, state in enumerate(states):
        state = int(state)
        if not 0 <= state <= num_states:
            raise ValueError(f"state {state} of simple sentence {index} is outside 0..{num_states}")
        links.append(() if state == 0 else tuple(range(int(starts[state - 1]), int(ends[state - 1]))))
    return groups_from_links(links)


def groups_from_links(links: Sequence[Sequence[int]]) -> list[Group]:
    """Alignment groups from each simple sentence's complex sentences (empty: unaligned).

    Rule: a simple sentence joins the open group when the previous simple sentence
    belongs to it and its complex sentences share at least one with the group's complex
    sentences so far; otherwise it opens a new group. An unlinked sentence closes the
    open group. So equal spans on neighbours give a 1:n split, a span state gives an n:1
    merge, and overlapping spans on neighbours give n:m. Non-adjacent simple sentences
    that pick the same span stay in separate groups.
    """
    groups: list[Group] = []
    complex_set: set[int] = set()
    simple_run: list[int] = []
    for index, linked in enumerate(links):
        span = {int(c) for c in linked}
        if simple_run and span & complex_set:
            complex_set |= span
            simple_run.append(index)
            continue
        if simple_run:
            groups.append((sorted(complex_set), simple_run))
        complex_set, simple_run = span, ([index] if span else [])
    if simple_run:
        groups.append((sorted(complex_set), simple_run))
    return groups


def groups_to_states(groups: Sequence[Group], m: int, n: int, max_span: int) -> list[int]:
    """Gold state of each of the m simple sentences from gold groups; unaligned sentences get 0.

    A simple sentence's target is the union of the complex sentences of every group
    that contains it. When the target is at most ``max_span`` wide, its state is
    the smallest span covering it (exact for consecutive targets). Otherwise it is
    the ``max_span`` window covering the most targets (earliest on ties), trimmed
    to the targets it covers. So a group that the CRF can represent survives
    ``states_to_groups(groups_to_states(...))`` unchanged.
    """
    if m < 1 or n < 1:
        raise ValueError(f"need at least one sentence on each side, got m={m}, n={n}")
    targets: list[set[int]] = [set() for _ in range(m)]
    for group_index, (complex_indices, simple_indices) in enumerate(groups):
        bad_complex = [c for c in complex_indices if not 0 <= c < n]
        bad_simple = [s for s in simple_indices if not 0 <= s < m]
        if bad_complex or bad_simple:
            raise ValueError(
                f"group {group_index} has complex indices {bad_complex} outside 0..{n - 1} "
                f"or simple indices {bad_simple} outside 0..{m - 1}"
            )
        for simple in simple_indices:
            targets[simple].update(int(c) for c in complex_indices)
    starts, ends = span_states(n, max_span)
    state_of = {(int(s), int(e)): k + 1 for k, (s, e) in enumerate(zip(starts, ends))}
    return [state_of[_covering_span(sorted(target), max_span)] if target else 0 for target in targets]


def _covering_span(targets: list[int], max_span: int) -> tuple[int, int]:
    low, high = targets[0], targets[-1] + 1
    if high - low <= max_span:
        return low, high
    target_set = set(targets)
    best_start = max(range(low, high - max_span + 1), key=lambda s: (len(target_set & set(range(s, s + max_span))), -s))
    covered = sorted(target_set & set(range(best_start, best_start + max_span)))
    return covered[0], covered[-1] + 1


class NeuralCRF(nn.Module):
    """Linear-chain CRF over span states; ``forward`` gives log P(gold | S, C), ``decode`` runs Viterbi.

    Every method takes one document pair as a similarity matrix ``sim`` of shape
    (m, n): simple sentences by complex sentences. Parameters are initialised
    from ``seed`` with a local generator, so construction touches no global RNG.
    """

    def __init__(self, config: CRFConfig | None = None, *, seed: int = 0) -> None:
        super().__init__()
        self.config = config or CRFConfig()
        generator = torch.Generator().manual_seed(seed)
        hidden = self.config.hidden_size
        self.transition_hidden = nn.Linear(4, hidden)
        self.transition_out = nn.Linear(hidden, 1)
        for layer in (self.transition_hidden, self.transition_out):
            bound = 1.0 / layer.in_features**0.5  # PyTorch's default Linear range, drawn from our generator
            with torch.no_grad():
                layer.weight.copy_(torch.empty_like(layer.weight).uniform_(-bound, bound, generator=generator))
                layer.bias.copy_(torch.empty_like(layer.bias).uniform_(-bound, bound, generator=generator))
        self.null_emission = nn.Parameter(torch.tensor(float(self.config.null_emission_init)))
        span_weights = torch.zeros(self.config.max_span, 2)  # (max_span, 2): weights of [mean, min] per length
        span_weights[:, 0] = 1.0
        self.span_weights = nn.Parameter(span_weights)
        self.span_bias = nn.Parameter(torch.zeros(self.config.max_span))  # (max_span,)
        self._transition_tables = TransitionTables()  # see transitions()

    # ----- model definition -------------------------------------------------------------

    def states(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Span table ``starts (K,), ends (K,)`` for n complex sentences under this config."""
        return span_states(n, self.config.max_span)

    def emissions(self, sim: torch.Tensor) -> torch.Tensor:
        """Emission score of every state for every simple sentence: (m, K+1), column 0 is null."""
        sim = self._check_sim(sim)  # (m, n)
        m, n = sim.shape
        columns = [self.null_emission.expand(m, 1)]  # (m, 1)
        for length in range(1, min(self.config.max_span, n) + 1):
            windows = sim.unfold(1, length, 1)  # (m, n-L+1, L)
            summary = torch.stack([windows.mean(dim=-1), windows.amin(dim=-1)], dim=-1)  # (m, n-L+1, 2)
            columns.append(summary @ self.span_weights[length - 1] + self.span_bias[length - 1])  # (m, n-L+1)
        return torch.cat(columns, dim=1)  # (m, K+1)

    def transitions(self, n: int) -> torch.Tensor:
        """``T[prev, cur]`` for every state pair over n complex sentences: (K+1, K+1).

        The FFNN scores each distinct feature vector once (at most n + 3 of them, :mod:`models_ml.aligning.crf_transitions`) and the
        table is filled by lookup: scoring every pair cost (K+1)^2 x hidden multiply-adds, two thirds of a
        2,000-sentence pair's decoding, for the same values.

        Without gradients (decoding) the table depends only on n and the transition FFNN's weights, so the last
        small tables are kept while the weights stay the same (:class:`~models_ml.aligning.crf_transitions.TransitionTables`):
        an aligner decodes each paragraph as its own block, and building the table was a quarter of decoding such
        blocks. Callers must not change the returned table in place.
        """
        if torch.is_grad_enabled():
            return self._transition_table(n)
        weights = (self.transition_hidden.weight, self.transition_hidden.bias, self.transition_out.weight, self.transition_out.bias)
        return self._transition_tables.table(n, weights, self._transition_table)

    def _transition_table(self, n: int) -> torch.Tensor:
        # transition_codes' gaps, for the spans only: the null row and column are known, and int32 halves the traffic
        first, last = (positions[1:].to(torch.int32) for positions in self.state_positions(n))  # (K,) each: spans only
        gaps = torch.maximum(first[None, :] - last[:, None], first[:, None] - last[None, :]).clamp_(min=0)  # (K, K)
        top = int(gaps.max()) if gaps.numel() else 0
        values = self.transition_values(top)  # (top + 4,)
        span_null, null_span, null_null = (values[top - code] for code in NULL_CODES.values())
        first_row = torch.cat([null_null.view(1), null_span.expand(gaps.shape[1])])  # (K+1,): from null
        rest = torch.cat([span_null.expand(gaps.shape[0], 1), values[gaps]], dim=1)  # (K, K+1): from each span
        return torch.cat([first_row[None, :], rest])  # (K+1, K+1)

    def state_positions(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """First and last complex position of every state over n complex sentences, (K+1,) each; 0 for null."""
        starts, ends = (torch.as_tensor(a, device=self.null_emission.device) for a in self.states(n))
        zero = torch.zeros(1, dtype=starts.dtype, device=starts.device)
        return torch.cat([zero, starts]), torch.cat([zero, ends - 1])

    def transition_lookup(self, codes: torch.Tensor) -> torch.Tensor:
        """The transition score of each code of :func:`~models_ml.aligning.crf_transitions.transition_codes`, in its shape."""
        top = max(int(codes.max()), 0) if codes.numel() else 0  # the largest gap (all codes may be nulls)
        return self.transition_values(top)[torch.where(codes < 0, top - codes, codes)]

    def transition_values(self, top: int) -> torch.Tensor:
        """The transition FFNN on each distinct feature vector: gaps 0..top, then the codes -1, -2, -3 (top + 4,)."""
        dtype, device = self.null_emission.dtype, self.null_emission.device
        features = torch.zeros(top + 1 + len(NULL_CODES), 4, dtype=dtype, device=device)
        features[: top + 1, 0] = torch.arange(top + 1, dtype=dtype, device=device)
        for column, code in enumerate(NULL_CODES.values(), start=1):
            features[top - code, column] = 1.0  # -1 -> row top + 1, -2 -> top + 2, -3 -> top + 3
        return self.transition_out(torch.tanh(self.transition_hidden(features))).squeeze(-1)

    # ----- the pytorch-crf interface ------------------------------------------------------

    def score(self, sim: torch.Tensor, states: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Unnormalised ``Psi(a)`` of one state sequence: a scalar tensor."""
        emissions = self.emissions(sim)  # (m, K+1)
        tags = self._check_states(states, emissions)  # (m,)
        return self._sequence_score(emissions, self.transitions(sim.shape[1]), tags)

    def forward(self, sim: torch.Tensor, gold_states: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Log-likelihood ``log P(gold | S, C) = Psi(gold) - log Z`` (eq. 6): a scalar tensor."""
        emissions = self.emissions(sim)  # (m, K+1)
        tags = self._check_states(gold_states, emissions)  # (m,)
        transitions = self.transitions(sim.shape[1])  # (K+1, K+1)
        alphas = self._forward_alphas(emissions, transitions)  # (m, K+1)
        return self._sequence_score(emissions, transitions, tags) - torch.logsumexp(alphas[-1], dim=0)

    def log_partition(self, sim: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        """``log Z`` by the forward algorithm in log space, O(m K^2): a scalar tensor.

        ``allowed`` (m, K+1) bool keeps only those states (clamped decoding, :mod:`models_ml.aligning.clamp`):
        the log-sum over the sequences that use allowed states only.
        """
        emissions = self.clamped(self.emissions(sim), allowed)  # (m, K+1)
        alphas = self._forward_alphas(emissions, self.transitions(sim.shape[1]))  # (m, K+1)
        return torch.logsumexp(alphas[-1], dim=0)

    def posterior(self, emissions: torch.Tensor, transitions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginals (m, K+1) and ``log Z`` by forward-backward from given emissions and transitions.

        For callers that change the emissions many times over fixed transitions (the per-pair
        refit, :mod:`models_ml.aligning.refit`), and the shared step of :meth:`marginals` and
        :meth:`decode_with_marginals`.
        """
        alphas = self._forward_alphas(emissions, transitions)  # (m, K+1)
        betas = self._backward_betas(emissions, transitions)  # (m, K+1)
        log_z = torch.logsumexp(alphas[-1], dim=0)
        return torch.exp(alphas + betas - log_z), log_z  # (m, K+1), scalar

    def marginals(self, sim: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        """``P(a_i = k | S, C)`` by forward-backward: (m, K+1), each row sums to 1 (given ``allowed``, see :meth:`clamped`)."""
        emissions = self.clamped(self.emissions(sim), allowed)  # (m, K+1)
        return self.posterior(emissions, self.transitions(sim.shape[1]))[0]

    def decode(self, sim: torch.Tensor, allowed: torch.Tensor | None = None) -> list[int]:
        """Most probable state sequence (eq. 5) by Viterbi: one state per simple sentence (among ``allowed``)."""
        with torch.no_grad():
            emissions = self.clamped(self.emissions(sim), allowed)  # (m, K+1)
            return self._viterbi(emissions, self.transitions(sim.shape[1]))

    def decode_with_marginals(self, sim: torch.Tensor, allowed: torch.Tensor | None = None) -> tuple[list[int], torch.Tensor]:
        """:meth:`decode` and :meth:`marginals` from one computation of emissions and transitions."""
        with torch.no_grad():
            emissions = self.clamped(self.emissions(sim), allowed)  # (m, K+1)
            transitions = self.transitions(sim.shape[1])  # (K+1, K+1)
            return self._viterbi(emissions, transitions), self.posterior(emissions, transitions)[0]

    @staticmethod
    def clamped(emissions: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        """``emissions`` (m, K+1) with every state outside ``allowed`` (m, K+1) bool at -inf, so no sequence uses it.

        Viterbi then finds the best sequence through the allowed states, and forward-backward gives
        the marginals *given* them: the CRF decoded with some sentences' states known. Every row
        must allow at least one state.
        """
        if allowed is None:
            return emissions
        allowed = torch.as_tensor(allowed, dtype=torch.bool, device=emissions.device)
        if allowed.shape != emissions.shape:
            raise ValueError(f"allowed has shape {tuple(allowed.shape)}, expected {tuple(emissions.shape)}")
        empty = (~allowed.any(dim=1)).nonzero().flatten().tolist()
        if empty:
            raise ValueError(f"simple sentence(s) {empty} allow no state")
        return emissions.masked_fill(~allowed, float("-inf"))

    def groups(self, states: Sequence[int], n: int) -> list[Group]:
        """Alignment groups of a decoded sequence over n complex sentences (see :func:`states_to_groups`)."""
        starts, ends = self.states(n)
        return states_to_groups(states, starts, ends)

    def gold_states(self, groups: Sequence[Group], m: int, n: int) -> list[int]:
        """Gold states for the m simple sentences from gold groups (see :func:`groups_to_states`)."""
        return groups_to_states(groups, m, n, self.config.max_span)

    # ----- recurrences ------------------------------------------------------------------

    def _sequence_score(self, emissions: torch.Tensor, transitions: torch.Tensor, tags: torch.Tensor) -> torch.Tensor:
        assert emissions.dim() == 2 and tags.shape == (emissions.shape[0],)
        assert transitions.shape == (emissions.shape[1], emissions.shape[1])
        previous = torch.cat([tags.new_zeros(1), tags[:-1]])  # (m,) with the virtual a_0 = null
        positions = torch.arange(tags.shape[0], device=tags.device)
        return emissions[positions, tags].sum() + transitions[previous, tags].sum()

    def _forward_alphas(self, emissions: torch.Tensor, transitions: torch.Tensor) -> torch.Tensor:
        """``alphas[i, k]`` = log-sum of the scores of all prefixes ending in state k at sentence i.

        Each step is a matrix-vector product in probability space, rescaled by the
        running maximum, instead of a log-sum-exp over all (K+1)^2 state pairs: one
        exp of the (K+1, K+1) transitions for the whole document, then BLAS.
        """
        assert emissions.dim() == 2 and transitions.shape == (emissions.shape[1], emissions.shape[1])
        shift = transitions.max()
        exp_transitions = torch.exp(transitions - shift)  # (K+1 prev, K+1 cur), entries in (0, 1]
        alpha = transitions[0] + emissions[0]  # (K+1,) from the virtual null
        alphas = [alpha]
        for i in range(1, emissions.shape[0]):
            scale = alpha.max()
            summed = torch.exp(alpha - scale) @ exp_transitions  # (K+1,) = sum_prev exp(alpha + T - scale - shift)
            alpha = torch.log(summed) + scale + shift + emissions[i]  # (K+1,)
            alphas.append(alpha)
        return torch.stack(alphas)  # (m, K+1)

    def _backward_betas(self, emissions: torch.Tensor, transitions: torch.Tensor) -> torch.Tensor:
        """``betas[i, k]`` = log-sum of the scores of all suffixes after sentence i given state k there."""
        assert emissions.dim() == 2 and transitions.shape == (emissions.shape[1], emissions.shape[1])
        shift = transitions.max()
        exp_transitions = torch.exp(transitions - shift)  # (K+1 prev, K+1 cur)
        beta = torch.zeros_like(emissions[0])  # (K+1,)
        betas = [beta]
        for i in range(emissions.shape[0] - 1, 0, -1):
            following = emissions[i] + beta  # (K+1,) score of being in each state at sentence i onwards
            scale = following.max()
            beta = torch.log(exp_transitions @ torch.exp(following - scale)) + scale + shift  # (K+1,)
            betas.append(beta)
        return torch.stack(betas[::-1])  # (m, K+1)

    def _viterbi(self, emissions: torch.Tensor, transitions: torch.Tensor) -> list[int]:
        assert emissions.dim() == 2 and transitions.shape == (emissions.shape[1], emissions.shape[1])
        incoming = transitions.t().contiguous()  # (K+1 cur, K+1 prev): reduce over the contiguous axis
        best = transitions[0] + emissions[0]  # (K+1,)
        backpointers = []
        for i in range(1, emissions.shape[0]):
            best, previous = (incoming + best[None, :]).max(dim=1)  # (K+1,), (K+1,)
            best = best + emissions[i]
            backpointers.append(previous.to(torch.int32))  # half the memory of int64 for long documents
        path = [int(best.argmax())]
        for previous in reversed(backpointers):
            path.append(int(previous[path[-1]]))
        return path[::-1]

    def _check_sim(self, sim: torch.Tensor) -> torch.Tensor:
        if not isinstance(sim, torch.Tensor):
            raise ValueError(f"sim must be a torch.Tensor of shape (m, n), got {type(sim).__name__}")
        if sim.dim() != 2:
            raise ValueError(f"sim must be 2-D (simple x complex sentences), got shape {tuple(sim.shape)}")
        if sim.shape[0] == 0 or sim.shape[1] == 0:
            raise ValueError(f"sim needs at least one simple and one complex sentence, got shape {tuple(sim.shape)}")
        if not sim.is_floating_point():
            raise ValueError(f"sim must hold floats, got dtype {sim.dtype}")
        if not torch.isfinite(sim).all():
            raise ValueError("sim contains NaN or infinite values")
        return sim.to(dtype=self.null_emission.dtype, device=self.null_emission.device)

    def _check_states(self, states: Sequence[int] | torch.Tensor, emissions: torch.Tensor) -> torch.Tensor:
        tags = torch.as_tensor(states, dtype=torch.long, device=emissions.device).reshape(-1)  # (m,)
        m, num_states = emissions.shape
        if tags.shape[0] != m:
            raise ValueError(f"got {tags.shape[0]} states for {m} simple sentences")
        if bool((tags < 0).any()) or bool((tags >= num_states).any()):
            raise ValueError(f"states must lie in 0..{num_states - 1}, got {tags.tolist()}")
        return tags


def train_crf(
    crf: NeuralCRF,
    examples: Sequence[tuple[torch.Tensor, Sequence[int]]],
    *,
    epochs: int,
    lr: float,
    seed: int,
    device: str | torch.device,
    on_epoch: Callable[[int, float], bool] | None = None,
) -> list[float]:
    """Maximise the log-likelihood of (sim (m, n), gold states (m,)) pairs with Adam, one step per pair.

    The pair order is shuffled each epoch by a generator seeded from ``seed``, so
    the run is deterministic and no global RNG is touched. Returns the mean
    log-likelihood per example for each epoch (measured before each step).
    on_epoch(epoch, mean log-likelihood) is called after every epoch (1-based); when it
    returns True, training stops there (early stopping, cancellation).
    """
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not examples:
        raise ValueError("train_crf needs at least one (sim, gold states) example")
    crf.to(device)
    crf.train()
    prepared = [(sim.to(device), torch.as_tensor(gold, dtype=torch.long, device=device)) for sim, gold in examples]
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(crf.parameters(), lr=lr)
    history: list[float] = []
    for epoch in range(1, epochs + 1):
        total = 0.0
        for index in torch.randperm(len(prepared), generator=generator).tolist():
            sim, gold = prepared[index]
            optimizer.zero_grad()
            log_likelihood = crf(sim, gold)
            (-log_likelihood).backward()
            optimizer.step()
            total += float(log_likelihood.detach())
        history.append(total / len(prepared))
        if on_epoch is not None:
            crf.eval()
            stop = on_epoch(epoch, history[-1])
            crf.train()
            if stop:
                break
    crf.eval()
    return history
