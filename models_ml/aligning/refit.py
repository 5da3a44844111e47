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
a few L-BFGS steps: milliseconds for a 100 x 100 pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from models_ml.aligning.aligner import Aligner

Block = tuple[np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None"]  # rows (r,), cols (c,), sim (r, c), allowed (r, K+1)

REFIT_PRIOR = 2.0  # weight of (bias^2 + position_weight^2); see bench/deplain_interactive.py
REFIT_STEPS = 25


def closeness(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(r, c) minus the distance between the rows' and columns' relative positions in an (m, n) pair."""
    m, n = shape
    simple = rows.astype(np.float64) / max(m - 1, 1)  # (r,)
    complex_ = cols.astype(np.float64) / max(n - 1, 1)  # (c,)
    return -np.abs(simple[:, None] - complex_[None, :]).astype(np.float32)  # (r, c)


def refit_blocks(aligner: Aligner, blocks: list[Block], shape: tuple[int, int], *, prior: float = REFIT_PRIOR) -> list[Block]:
    """``blocks`` with the fitted correction added to their similarities (unchanged when no block has a known sentence)."""
    crf, scale, device = aligner.crf, aligner.config.emission_scale, aligner.device
    known = [
        (torch.as_tensor(scale * sim, dtype=torch.float32, device=device),
         torch.as_tensor(closeness(rows, cols, shape), device=device),
         torch.as_tensor(allowed, device=device))
        for rows, cols, sim, allowed in blocks
        if allowed is not None and allowed.shape[1] <= aligner.config.dense_state_limit  # a pruned block is decoded, not refitted
    ]  # fmt: skip
    if not known:
        return blocks
    theta = torch.zeros(2, device=device, requires_grad=True)  # (bias, position_weight)
    optimizer = torch.optim.LBFGS([theta], lr=0.5, max_iter=REFIT_STEPS, line_search_fn="strong_wolfe")
    frozen = [parameter.requires_grad for parameter in crf.parameters()]
    for parameter in crf.parameters():
        parameter.requires_grad_(False)

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        value = prior * (theta**2).sum()
        for sim, near, allowed in known:
            adjusted = sim + theta[0] + theta[1] * near  # (r, c)
            value = value - (crf.log_partition(adjusted, allowed) - crf.log_partition(adjusted))
        value.backward()
        return value.detach()  # L-BFGS reads the value; the gradient is on theta already

    try:
        optimizer.step(loss)
    finally:
        for parameter, flag in zip(crf.parameters(), frozen):
            parameter.requires_grad_(flag)
    bias, weight = (float(x) for x in theta.detach().cpu())
    if not np.isfinite([bias, weight]).all():
        return blocks
    return [(rows, cols, sim + (bias + weight * closeness(rows, cols, shape)) / scale, allowed) for rows, cols, sim, allowed in blocks]
