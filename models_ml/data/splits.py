"""Document-pair-level train / dev / test splits that stay put as labels grow.

Why not a plain seeded shuffle: a project's gold grows every day. If each training snapshot
reshuffled its document pairs, a pair used for training yesterday could be in today's test
set, and comparing yesterday's model with today's on that test set would reward memory.
So a split is *sticky*: pairs keep the split an earlier snapshot gave them, and only new
pairs are placed. New pairs are taken in the order of a seeded hash of their key (the order
does not depend on how many other pairs there are) and each goes where it is needed most:
first to any split with a positive fraction that is still empty (test, then dev, then
train, so even three pairs give one of each), then to the split furthest below its share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

__all__ = ["DEFAULT_FRACTIONS", "SPLITS", "assign_splits"]

SPLITS = ("train", "dev", "test")
DEFAULT_FRACTIONS: Mapping[str, float] = {"train": 0.7, "dev": 0.15, "test": 0.15}
_FILL_EMPTY_FIRST = ("test", "dev", "train")


def _hash_key(seed: int, key: object) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def assign_splits(
    keys: Iterable[object],
    *,
    seed: int,
    fractions: Mapping[str, float] = DEFAULT_FRACTIONS,
    previous: Mapping[object, str] | None = None,
) -> dict[object, str]:
    """Map every key (a document pair id) to "train", "dev" or "test".

    previous: an earlier assignment; its keys that are still present keep their split.
    fractions: the share of each split (non-negative, summing to 1; a split may be 0).
    Deterministic in (keys, seed, fractions, previous); no global random state.
    """
    unknown = set(fractions) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown split(s) {sorted(unknown)}; splits: {', '.join(SPLITS)}")
    if any(value < 0 for value in fractions.values()) or abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise ValueError(f"split fractions must be >= 0 and sum to 1, got {dict(fractions)}")
    unique = list(dict.fromkeys(keys))
    previous = previous or {}
    assignment = {key: previous[key] for key in unique if key in previous}
    bad = {split for split in assignment.values() if split not in SPLITS}
    if bad:
        raise ValueError(f"previous assignment has unknown split(s) {sorted(bad)}")
    counts = {split: 0 for split in SPLITS}
    for split in assignment.values():
        counts[split] += 1
    total = len(assignment)
    for key in sorted((k for k in unique if k not in assignment), key=lambda k: _hash_key(seed, k)):
        total += 1
        empty = [s for s in _FILL_EMPTY_FIRST if fractions.get(s, 0.0) > 0 and counts[s] == 0]
        if empty:
            chosen = empty[0]
        else:
            chosen = max(SPLITS, key=lambda s: (fractions.get(s, 0.0) * total - counts[s], -SPLITS.index(s)))
        assignment[key] = chosen
        counts[chosen] += 1
    return assignment
