"""Time the vectorised CRF recurrences against plain Python loops over the same matrices.

    .venv/bin/python bench/crf_speed.py [--repeats 3] [--threads 1]

For m = n = 30, 60, 120 and max_span 1 and 3, builds one random similarity
matrix, computes the model's emissions (m, K+1) and transitions (K+1, K+1) once,
then times:

- vectorised: ``NeuralCRF._viterbi`` + ``NeuralCRF._forward_alphas`` on those
  matrices (recurrences only), and ``decode`` + ``log_partition`` from ``sim``
  (which also build emissions and run the transition FFNN);
- loops: Viterbi and the forward algorithm as nested Python loops over sentence,
  current state and previous state on Python floats, the way the authors'
  released ``aligner/model.py`` does it.

It checks that both give the same Viterbi path and log Z within 1e-4, then prints
the times and the speed-up. Everything runs in float64 so the check is exact to
rounding. Vectorised times are the best of ``--repeats`` runs; loops run once.
Torch uses one CPU thread by default, like the loops, which also keeps the
figures steady on a shared machine.

A second table times the transition table (K+1, K+1) for n = 30 to 1,000 complex
sentences with spans up to 3, in float32 as the app runs it: ``NeuralCRF.transitions``
(the FFNN once per distinct feature vector, then a lookup) against the FFNN run over
every pair's features (``transition_features``, 256 previous states at a time, as it
was computed before), and checks that the tables agree within 1e-6 (float32 rounding).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import torch

from models_ml.aligning.crf import CRFConfig, NeuralCRF
from models_ml.aligning.crf_transitions import transition_features

SIZES = (30, 60, 120)
MAX_SPANS = (1, 3)
TRANSITION_SIZES = (30, 100, 300, 1000)


def loop_viterbi(emissions: list[list[float]], transitions: list[list[float]]) -> list[int]:
    """Viterbi with a_0 = null, nested loops over i, current and previous state."""
    num_states = len(transitions)
    best = [transitions[0][k] + emissions[0][k] for k in range(num_states)]
    backpointers: list[list[int]] = []
    for i in range(1, len(emissions)):
        new_best = [0.0] * num_states
        pointers = [0] * num_states
        for current in range(num_states):
            top, top_previous = -math.inf, 0
            for previous in range(num_states):
                value = best[previous] + transitions[previous][current]
                if value > top:
                    top, top_previous = value, previous
            new_best[current] = top + emissions[i][current]
            pointers[current] = top_previous
        best = new_best
        backpointers.append(pointers)
    path = [max(range(num_states), key=lambda k: best[k])]
    for pointers in reversed(backpointers):
        path.append(pointers[path[-1]])
    return path[::-1]


def loop_log_partition(emissions: list[list[float]], transitions: list[list[float]]) -> float:
    """Forward algorithm in log space with a_0 = null, nested loops over i, current and previous state."""
    num_states = len(transitions)
    alpha = [transitions[0][k] + emissions[0][k] for k in range(num_states)]
    for i in range(1, len(emissions)):
        new_alpha = [0.0] * num_states
        for current in range(num_states):
            top = -math.inf
            for previous in range(num_states):
                top = max(top, alpha[previous] + transitions[previous][current])
            total = 0.0
            for previous in range(num_states):
                total += math.exp(alpha[previous] + transitions[previous][current] - top)
            new_alpha[current] = top + math.log(total) + emissions[i][current]
        alpha = new_alpha
    top = max(alpha)
    return top + math.log(sum(math.exp(a - top) for a in alpha))


def vectorised_recurrences(crf: NeuralCRF, emissions: torch.Tensor, transitions: torch.Tensor) -> tuple[list[int], float]:
    """The CRF's own Viterbi and forward recurrences on precomputed (m, K+1) and (K+1, K+1) matrices."""
    alphas = crf._forward_alphas(emissions, transitions)  # (m, K+1)
    return crf._viterbi(emissions, transitions), float(torch.logsumexp(alphas[-1], dim=0))


def vectorised_full(crf: NeuralCRF, sim: torch.Tensor) -> tuple[list[int], float]:
    """The public calls from a (m, n) similarity matrix: emissions and transition FFNN included."""
    return crf.decode(sim), float(crf.log_partition(sim))


def transitions_per_pair(crf: NeuralCRF, n: int) -> torch.Tensor:
    """The reference: the transition FFNN over every (previous, current) pair's features, 256 previous states a call."""
    starts, ends = (torch.as_tensor(a) for a in crf.states(n))
    features = transition_features(starts, ends).to(crf.null_emission.dtype)  # (K+1, K+1, 4)
    rows = [
        crf.transition_out(torch.tanh(crf.transition_hidden(features[at : at + 256]))).squeeze(-1) for at in range(0, len(features), 256)
    ]
    return torch.cat(rows)  # (K+1, K+1)


def transition_table(repeats: int) -> None:
    print("\ntransition table, float32, spans up to 3: looked up by code vs the FFNN over every pair")
    header = f"{'n':>5} {'states':>6} | {'looked up (s)':>13} {'every pair (s)':>14} | {'speed-up':>8} {'max |diff|':>13}"
    print(header)
    print("-" * len(header))
    crf = NeuralCRF(CRFConfig(max_span=3), seed=0).eval()
    with torch.no_grad():
        for n in TRANSITION_SIZES:
            looked_up, every_pair = crf.transitions(n), transitions_per_pair(crf, n)
            difference = float((looked_up - every_pair).abs().max())  # float32 rounding: the FFNN's batch shape differs
            if difference > 1e-6:
                raise SystemExit(f"transition tables differ at n={n}: by up to {difference}")
            fast = best_time(repeats, crf.transitions, n)
            slow = best_time(repeats, transitions_per_pair, crf, n)
            print(f"{n:>5} {looked_up.shape[0]:>6} | {fast:>13.4f} {slow:>14.4f} | {slow / fast:>7.1f}x {difference:>13.1e}")
    print("tables equal within 1e-6 in every case")


def best_time(repeats: int, function: Callable[..., object], *arguments: object) -> float:
    """Best wall time in seconds of ``function(*arguments)`` over ``repeats`` runs."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        function(*arguments)
        timings.append(time.perf_counter() - started)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each vectorised timing; the best is kept")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, float64")
    header = (
        f"{'m=n':>4} {'span':>4} {'states':>6} | {'vec rec (s)':>11} {'vec full (s)':>12} | "
        f"{'loop viterbi (s)':>16} {'loop forward (s)':>16} | {'speed-up rec':>12} {'speed-up full':>13}"
    )
    print(header)
    print("-" * len(header))
    generator = torch.Generator().manual_seed(0)
    for max_span in MAX_SPANS:
        crf = NeuralCRF(CRFConfig(max_span=max_span), seed=0).double().eval()
        for size in SIZES:
            sim = torch.rand(size, size, generator=generator, dtype=torch.float64)  # (m, n)
            with torch.no_grad():
                emissions = crf.emissions(sim)  # (m, K+1)
                transitions = crf.transitions(size)  # (K+1, K+1)
                vec_rec = best_time(args.repeats, vectorised_recurrences, crf, emissions, transitions)
                vec_full = best_time(args.repeats, vectorised_full, crf, sim)
                vec_path, vec_log_z = vectorised_full(crf, sim)
            emission_rows, transition_rows = emissions.tolist(), transitions.tolist()
            started = time.perf_counter()
            loop_path = loop_viterbi(emission_rows, transition_rows)
            loop_vit = time.perf_counter() - started
            started = time.perf_counter()
            loop_log_z = loop_log_partition(emission_rows, transition_rows)
            loop_fwd = time.perf_counter() - started
            if loop_path != vec_path:
                raise SystemExit(f"Viterbi paths differ at m=n={size}, max_span={max_span}")
            if abs(loop_log_z - vec_log_z) > 1e-4:
                raise SystemExit(f"log Z differs at m=n={size}, max_span={max_span}: {loop_log_z} vs {vec_log_z}")
            loop_total = loop_vit + loop_fwd
            print(
                f"{size:>4} {max_span:>4} {transitions.shape[0]:>6} | {vec_rec:>11.4f} {vec_full:>12.4f} | "
                f"{loop_vit:>16.3f} {loop_fwd:>16.3f} | {loop_total / vec_rec:>11.0f}x {loop_total / vec_full:>12.0f}x"
            )
    print("paths identical and |log Z difference| <= 1e-4 in every case")
    transition_table(args.repeats)


if __name__ == "__main__":
    main()
