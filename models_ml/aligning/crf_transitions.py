"""The features of the CRF's transitions (:class:`models_ml.aligning.crf.NeuralCRF`), and the codes that let its
transition network score each distinct feature vector once.

``T(a_{i-1}, a_i) = FFNN([g1, g2, g3, g4])``: g1 is the gap between two spans (0 when either state is null), g2..g4
say which of the two is null. So the features take at most n + 3 distinct values over n complex sentences: each gap
``g`` as ``[g, 0, 0, 0]``, and one vector for each way null can be involved.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress

import torch

TRANSITION_TABLES_KEPT = 64  # transition tables a CRF keeps for decoding, the most recently used ...
TRANSITION_TABLE_MAX_CELLS = 65_536  # ... of at most this many cells each: at most 16 MiB of float32 in all


def transition_features(starts: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """Features ``[g1, g2, g3, g4]`` for every (previous, current) state pair: shape (K+1, K+1, 4).

    ``starts`` and ``ends`` are the (K,) span table; index 0 of both axes is the null state.
    """
    zero = torch.zeros(1, dtype=starts.dtype, device=starts.device)
    first = torch.cat([zero, starts])  # (K+1,) first complex position of each state
    last = torch.cat([zero, ends - 1])  # (K+1,) last complex position of each state
    is_null = torch.zeros(first.shape[0], dtype=torch.bool, device=starts.device)  # (K+1,)
    is_null[0] = True
    prev_null, cur_null = is_null[:, None], is_null[None, :]  # (K+1, 1), (1, K+1)
    gap = torch.maximum(first[None, :] - last[:, None], first[:, None] - last[None, :])  # (K+1, K+1)
    g1 = gap.clamp(min=0).masked_fill(prev_null | cur_null, 0)  # (K+1, K+1)
    g2 = cur_null & ~prev_null  # (K+1, K+1)
    g3 = ~cur_null & prev_null
    g4 = cur_null & prev_null
    return torch.stack([g1.float(), g2.float(), g3.float(), g4.float()], dim=-1)  # (K+1, K+1, 4)


NULL_CODES = {(False, True): -1, (True, False): -2, (True, True): -3}  # (previous null, current null): code


def transition_codes(
    prev_first: torch.Tensor, prev_last: torch.Tensor, prev_null: torch.Tensor,
    cur_first: torch.Tensor, cur_last: torch.Tensor, cur_null: torch.Tensor,
) -> torch.Tensor:  # fmt: skip
    """Which row of :func:`transition_features` each (previous, current) pair has, broadcast over the arguments.

    A transition's features take few values: ``[g, 0, 0, 0]`` for two spans ``g`` complex sentences apart, and one
    vector for each way null can be involved. The code is ``g`` (>= 0) for two spans and ``NULL_CODES``' negative
    codes otherwise, so the FFNN runs once per distinct code instead of once per pair.
    """
    gap = torch.maximum(cur_first - prev_last, prev_first - cur_last).clamp(min=0)
    codes = gap.masked_fill(~prev_null & cur_null, NULL_CODES[False, True])
    codes = codes.masked_fill(prev_null & ~cur_null, NULL_CODES[True, False])
    return codes.masked_fill(prev_null & cur_null, NULL_CODES[True, True])


class TransitionTables:
    """A CRF's transition tables by n, kept while its transition weights are the same tensors at the same version.

    An optimiser step, ``load_state_dict`` and ``to()`` change a weight's version or its storage, and the tables are
    dropped. The weights' storages are held with the tables, so no other tensor can take their addresses meanwhile.
    """

    def __init__(self) -> None:
        self._tables: OrderedDict[int, torch.Tensor] = OrderedDict()  # n -> (K+1, K+1), least recently used first
        self._version: tuple[tuple[int, int], ...] = ()  # (address, version) of each weight the tables were built from
        self._storages: list[torch.UntypedStorage] = []

    def table(self, n: int, weights: tuple[torch.Tensor, ...], build: Callable[[int], torch.Tensor]) -> torch.Tensor:
        """The kept table of n complex sentences, or ``build(n)``, kept when it has at most TRANSITION_TABLE_MAX_CELLS."""
        version = tuple((weight.data_ptr(), weight._version) for weight in weights)
        if version != self._version:
            self._tables.clear()
            self._version, self._storages = version, [weight.untyped_storage() for weight in weights]
        table = self._tables.get(n)
        if table is None:
            table = build(n)
            if table.numel() <= TRANSITION_TABLE_MAX_CELLS:
                self._tables[n] = table
        with suppress(KeyError):  # another thread decoding with the same CRF may have dropped a table meanwhile
            self._tables.move_to_end(n)
            if len(self._tables) > TRANSITION_TABLES_KEPT:
                self._tables.popitem(last=False)
        return table

    def kept(self) -> list[int]:
        """The n of each kept table, least recently used first."""
        return list(self._tables)

    def __reduce__(self) -> tuple[type, tuple]:
        """A copy or a pickle of the CRF starts with no tables: the storages held would be saved beside the weights."""
        return TransitionTables, ()
