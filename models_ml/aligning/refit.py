"""A per-pair correction of the aligner's scores, fitted to the links an annotator gave in this pair.

Clamped decoding (:mod:`models_ml.aligning.clamp`) uses the known links through the CRF's
transitions only. What the labels also say is how this pair differs from what the model
learned: a retelling whose simple sentences have a partner far less often (the null state
should win more), or one that drifts from the complex document's order. So before decoding
again the CRF's input gets two per-pair terms,

    sim'(i, j) = sim(i, j) + bias + position_weight * closeness(i, j),
    closeness(i, j) = -| i / (m - 1) - j / (n - 1) |   (0 on the diagonal of the pair),

with ``(bias, position_weight)`` maximising the log-probability of the known sentences'
states under the CRF (every other sentence summed over), ``log Z_clamped - log Z``, minus
``prior * (bias^2 + position_weight^2)``: a Gaussian prior at zero, the model's own scores,
so a few labels move the scores only as far as they have evidence for. Two parameters and
a few L-BFGS steps, each one forward-backward pass of the clamped and the free CRF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from scipy import optimize

if TYPE_CHECKING:
    from models_ml.aligning.aligner import Aligner

Block = tuple[np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None"]  # rows (r,), cols (c,), sim (r, c), allowed (r, K+1)

REFIT_PRIOR = 2.0  # weight of (bias^2 + position_weight^2); see bench/deplain_interactive.py
REFIT_STEPS = 10


def closeness(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(r, c) minus the distance between the rows' and columns' relative positions in an (m, n) pair."""
    m, n = shape
    simple = rows.astype(np.float64) / max(m - 1, 1)  # (r,)
    complex_ = cols.astype(np.float64) / max(n - 1, 1)  # (c,)
    return -np.abs(simple[:, None] - complex_[None, :]).astype(np.float32)  # (r, c)


def _objective(theta_values: np.ndarray, crf, known: list, prior: float) -> tuple[float, np.ndarray]:
    """``-log P(known states) + prior |theta|^2`` and its gradient, from marginals instead of back-propagation.

    ``d log Z / d theta = sum_ik P(a_i = k) d e_ik / d theta`` for the clamped and the free CRF alike, so the
    gradient is one backward pass through the (vectorised) emissions, weighted by the difference of the
    two posteriors; the recurrences run without a graph.
    """
    theta = torch.tensor(theta_values, dtype=torch.float32, requires_grad=True)
    value = prior * float((theta.detach() ** 2).sum())
    gradient = 2 * prior * theta_values
    for sim, near, allowed, transitions in known:
        emissions = crf.emissions(sim + theta[0] + theta[1] * near)  # (r, K+1), a graph back to theta
        with torch.no_grad():
            free, log_z = crf.posterior(emissions, transitions)
            clamped, log_z_clamped = crf.posterior(crf.clamped(emissions, allowed), transitions)
        value += float(log_z - log_z_clamped)
        (step,) = torch.autograd.grad((emissions.masked_fill(~allowed, 0.0) * clamped).sum() * -1 + (emissions * free).sum(), theta)
        gradient = gradient + step.detach().cpu().double().numpy()
    return value, gradient


def refit_blocks(aligner: Aligner, blocks: list[Block], shape: tuple[int, int], *, prior: float = REFIT_PRIOR) -> list[Block]:
    """``blocks`` with the fitted correction added to their similarities (unchanged when no block has a known sentence)."""
    crf, scale, device = aligner.crf, aligner.config.emission_scale, aligner.device
    known = []  # per block with known sentences: scaled sim (r, c), closeness (r, c), allowed (r, K+1), transitions (K+1, K+1)
    with torch.no_grad():
        for rows, cols, sim, allowed in blocks:
            if allowed is None or allowed.shape[1] > aligner.config.dense_state_limit:  # a pruned block is decoded, not refitted
                continue
            known.append((
                torch.as_tensor(scale * sim, dtype=torch.float32, device=device), torch.as_tensor(closeness(rows, cols, shape), device=device),
                torch.as_tensor(allowed, device=device), crf.transitions(sim.shape[1]),
            ))  # fmt: skip
    if not known:
        return blocks
    frozen = [parameter.requires_grad for parameter in crf.parameters()]
    for parameter in crf.parameters():
        parameter.requires_grad_(False)
    try:
        fitted = optimize.minimize(_objective, np.zeros(2), args=(crf, known, prior), jac=True, method="L-BFGS-B",
                                   options={"maxiter": REFIT_STEPS})  # fmt: skip
    finally:
        for parameter, flag in zip(crf.parameters(), frozen):
            parameter.requires_grad_(flag)
    bias, weight = (float(x) for x in fitted.x)
    if not np.isfinite([bias, weight]).all():
        return blocks
    return [(rows, cols, sim + (bias + weight * closeness(rows, cols, shape)) / scale, allowed) for rows, cols, sim, allowed in blocks]
