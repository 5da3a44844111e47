"""A simulated annotator on the annotation screen's focus view, counting the keys it presses to reach the gold alignment.

Nothing here is a figure; ``bench/annotator_keys.py`` prints those. The screen is modelled from the code that
serves it, not restated:

- the keys are the bound keys of :data:`annotation.labelling.keys.SCREEN_KEYS` (the table the help dialog and the
  annotating guide list); a key that is no longer bound fails the bench. A chord (``A`` is Shift+a) is one key.
  The jump list (``g``) and the done dialog have keys of their own: each character typed is one key, and ``Enter``
  picks the first match or confirms.
- a simple sentence's candidates, their order, labels and confidence are those the screen's refresh serves
  (:func:`annotation.labelling.refresh.screen_entries`), from the aligner's decoding **given the annotator's
  labels so far** (clamped, as the refresh decodes); the refresh's windows give the full decoding's suggestions
  (``bench/refresh_latency.py`` measures them equal), so the whole pair is decoded again instead. A sentence the
  annotator has labelled keeps the candidates it had on screen.

The annotator knows the gold alignment and never makes a mistake; what is counted is the cost of saying it.
Strategies (both with the keys bound today):

- ``sentence``: one decision per simple sentence, in document order. ``j`` selects the next sentence and focuses
  its best suggestion; each gold partner is made the current pair by the cheaper of walking the candidate list
  (``l`` / ``h``) or the jump list (``g``, its number, ``Enter``), and labelled (``Enter`` when the suggestion's
  own label is the gold one, else ``a`` / ``p``); a suggestion with no gold partner is answered ``n``; a sentence
  with neither is passed with ``j`` alone. ``d`` ends the pair (and ``Enter`` confirms when sentences are left
  unlabelled, which then count as not aligned).
- ``paragraph``: ``A`` on entering each paragraph row accepts its remaining suggestions; then the same walk fixes
  what is wrong (``n`` on an accepted link that is not gold, the gold partners it missed as above).
- ``picker``: as ``sentence``, but the first :data:`PICKS` candidates of the sentence are numbered, and a digit
  links one (with its suggested label, else aligned) and moves on to the next sentence with no label: the
  sentence's last gold partner is picked so when a digit labels it right, and ``0`` answers a sentence with no
  partner (its suggestions not aligned) and moves on. ``bulk+picker``: both.
- ``bulk``: when the project has a threshold for its precision target (:mod:`annotation.labelling.bulk_estimate`,
  from the answered suggestions of the pairs done before this one), ``B`` and ``Enter`` accept every suggestion of
  the pair at or above it, and ``J`` visits only the sentences left open, which are answered as in ``sentence``.
  Bulk-accepted sentences are not looked at again: what they got wrong stays wrong, and is counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.labelling.bulk_estimate import PrecisionEstimate
from annotation.labelling.keys import FOCUS, SCREEN_KEYS, keymap
from annotation.labelling.refresh import screen_entries
from models_ml.aligning.aligner import Aligner, AlignmentResult
from models_ml.data.io import GoldPair

LINKED = ("aligned", "partial")
ACTION_KEY = {action: key for key, action in keymap(SCREEN_KEYS)[FOCUS].items()}  # action -> the key bound to it
DIALOG_KEYS = {
    "jump-type": "0-9 typed", "jump-pick": "Enter (jump list)", "finish-confirm": "Enter (done dialog)",
    "bulk-confirm": "Enter (bulk dialog)",
}  # fmt: skip
PICKS = 5  # candidates numbered on the screen (keys 1-5)
ACTIONS = ("next-simple", "next-open", "next-candidate", "prev-candidate", "jump", "label-aligned", "label-partial",
           "label-not_aligned", "accept", "accept-paragraph", "accept-bulk", "finish",
           *(f"pick-{k}" for k in range(1, PICKS + 1)), "pick-none")  # fmt: skip
STRATEGIES = ("sentence", "paragraph", "bulk", "picker", "bulk+picker")

missing = [action for action in ACTIONS if action not in ACTION_KEY]
if missing:
    raise SystemExit(f"the screen no longer binds {', '.join(missing)}: update bench/_keys.py")


@dataclass
class Tally:
    """Keys pressed (by action) over some pairs, the gold links reached, and what the bulk accepts got right."""

    keys: Counter = field(default_factory=Counter)
    pairs: int = 0
    simple: int = 0
    links: int = 0  # gold (simple, complex) links
    bulk: int = 0  # labels made by ``A`` or ``B``
    bulk_wrong: int = 0  # of them, not the gold label of the pair
    missed: int = 0  # gold links left unlabelled on sentences nobody looked at after a bulk accept
    answers: list[tuple[float, bool]] = field(default_factory=list)  # the pair's answered suggestions (bulk_estimate)

    @property
    def total(self) -> int:
        return sum(self.keys.values())

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.keys + other.keys, self.pairs + other.pairs, self.simple + other.simple, self.links + other.links,
            self.bulk + other.bulk, self.bulk_wrong + other.bulk_wrong, self.missed + other.missed, self.answers + other.answers,
        )  # fmt: skip


def gold_labels(pair: GoldPair) -> list[dict[int, str]]:
    """Each simple sentence's gold partners with their labels (empty: unaligned)."""
    links: list[dict[int, str]] = [{} for _ in pair.simple_sentences]
    for group in pair.groups:
        for j in group.simple:
            for i in group.complex:
                links[j][i] = group.label
    return links


class Screen:
    """One document pair as the screen shows it: the candidate list of each simple sentence, the annotator's labels."""

    def __init__(self, aligner: Aligner, pair: GoldPair, similarity: np.ndarray | None):
        self.aligner, self.pair = aligner, pair
        first = self._align(similarity, None)
        self.similarity = first.similarity
        self.labels: dict[tuple[int, int], str] = {}  # (simple, complex) -> label
        self.shown: dict[int, list[dict[str, Any]]] = {}
        self.rows = paragraph_rows(first, pair)
        self.bulk: set[tuple[int, int]] = set()  # the labels bulk accept made
        self._show(first)
        self.first = dict(self.shown)  # the stored run's candidates, as the page loads them

    def _align(self, similarity: np.ndarray | None, fixed: dict[int, tuple[int, ...]] | None) -> AlignmentResult:
        pair = self.pair
        return self.aligner.align(
            pair.complex_sentences, pair.simple_sentences, pair.complex_paragraphs, pair.simple_paragraphs,
            similarity=similarity, fixed=fixed or None,
        )  # fmt: skip

    def _show(self, result: AlignmentResult) -> None:
        m, n = len(self.pair.simple_sentences), len(self.pair.complex_sentences)
        entries = screen_entries(result, list(range(m)), list(range(n)))
        for j in range(m):
            if j not in self.labelled():
                self.shown[j] = entries.get(str(j), [])

    def labelled(self) -> set[int]:
        return {j for j, _ in self.labels}

    def refresh(self) -> None:
        """Decode again with every labelled sentence clamped to its links (none when all its labels say not aligned)."""
        fixed: dict[int, set[int]] = {}
        for (j, i), label in self.labels.items():
            fixed.setdefault(j, set())
            if label in LINKED:
                fixed[j].add(i)
        self._show(self._align(self.similarity, {j: tuple(sorted(links)) for j, links in fixed.items()}))

    def best(self, j: int) -> int | None:
        """The pair ``j`` focuses: the first suggested candidate, or none."""
        return next((entry["complex"] for entry in self.shown[j] if entry["predicted"] in LINKED), None)


def paragraph_rows(result: AlignmentResult, pair: GoldPair) -> list[int]:
    """Each simple sentence's paragraph row on the screen (the aligned paragraph group of its paragraph)."""
    if pair.simple_paragraphs is None:
        return [0] * len(pair.simple_sentences)
    row_of = {p: k for k, group in enumerate(result.paragraph_groups) for p in group.simple}
    return [row_of.get(p, -1 - p) for p in pair.simple_paragraphs]


def reach(entries: list[dict[str, Any]], current: int | None, target: int) -> list[str]:
    """The cheaper way to make ``target`` the current pair: walking the candidates, or the jump list by its number."""
    ways = [["jump", *["jump-type"] * len(str(target + 1)), "jump-pick"]]
    order = [entry["complex"] for entry in entries]
    if target in order:
        at = order.index(target)
        if current in order:
            step = at - order.index(current)
            ways.append(["next-candidate" if step > 0 else "prev-candidate"] * abs(step))
        else:
            ways.append(["next-candidate"] * (at + 1))  # from no current pair, l goes to the first
    return min(ways, key=len)


def say_links(screen: Screen, j: int, gold: dict[int, str], tally: Tally, *, picker: bool = False) -> bool:
    """Make the labels of simple sentence ``j`` the gold ones, from what the screen shows after ``j``. ``picker``: the
    last link may be made with its digit, which also moves on to the next open sentence, and ``0`` answers a sentence
    with no partner (and moves on). True when the sentence's last key moved on."""
    entries = screen.shown[j]
    predicted = {entry["complex"]: entry["predicted"] for entry in entries}
    position = {entry["complex"]: k for k, entry in enumerate(entries)}
    current = screen.best(j)
    wrong = [i for (s, i), label in screen.labels.items() if s == j and label in LINKED and i not in gold]
    todo = sorted((i for i in gold if screen.labels.get((j, i)) != gold[i]), key=lambda i: (position.get(i, len(entries)), i))
    last = None
    if picker:  # the gold partner a digit labels right, among the numbered ones, the dearest to reach otherwise
        pickable = [
            i for i in todo if position.get(i, PICKS) < PICKS and (predicted[i] if predicted[i] in LINKED else "aligned") == gold[i]
        ]
        if pickable:
            last = max(pickable, key=lambda i: (len(reach(entries, current, i)), -position[i]))
            todo.remove(last)
    for i in sorted(wrong, key=lambda i: (position.get(i, len(entries)), i)) + todo:
        if i != current:
            tally.keys.update(reach(entries, current, i))
            current = i
        if i in gold:
            tally.keys["accept" if predicted.get(i) == gold[i] else f"label-{gold[i]}"] += 1
            screen.labels[(j, i)] = gold[i]
        else:
            tally.keys["label-not_aligned"] += 1
            screen.labels[(j, i)] = "not_aligned"
    if last is not None:
        tally.keys[f"pick-{position[last] + 1}"] += 1
        screen.labels[(j, last)] = gold[last]
        return True
    if not gold and current is not None and (j, current) not in screen.labels:
        if picker:  # 0: every suggestion of the sentence not aligned, and on to the next
            tally.keys["pick-none"] += 1
            for entry in entries:
                if entry["predicted"] in LINKED and (j, entry["complex"]) not in screen.labels:
                    screen.labels[(j, entry["complex"])] = "not_aligned"
            return True
        tally.keys["label-not_aligned"] += 1  # the focused suggestion is wrong: n
        screen.labels[(j, current)] = "not_aligned"
    return False


def accept_suggestions(
    screen: Screen, sentences, golds: list[dict[int, str]], tally: Tally, *, threshold: float = 0.0, unseen: bool = False
) -> None:
    """Every suggestion of ``sentences`` with confidence >= ``threshold`` and no label yet, accepted with its own label;
    ``unseen``: nobody looks at them again (bulk accept)."""
    for j in sentences:
        for entry in screen.shown[j]:
            if entry["predicted"] in LINKED and (entry["confidence"] or 0.0) >= threshold and (j, entry["complex"]) not in screen.labels:
                screen.labels[(j, entry["complex"])] = entry["predicted"]
                if unseen:
                    screen.bulk.add((j, entry["complex"]))
                tally.bulk += 1
                tally.bulk_wrong += golds[j].get(entry["complex"]) != entry["predicted"]


def accept_row(screen: Screen, row: int, golds: list[dict[int, str]], tally: Tally) -> None:
    """``A``: every remaining suggestion of the row's unlabelled sentences, accepted with its own label."""
    tally.keys["accept-paragraph"] += 1
    accept_suggestions(screen, [j for j, in_row in enumerate(screen.rows) if in_row == row], golds, tally)


def accept_bulk(screen: Screen, threshold: float, golds: list[dict[int, str]], tally: Tally) -> None:
    """``B`` and ``Enter``: every suggestion of the pair with confidence ≥ ``threshold``, accepted with its own label."""
    tally.keys.update(["accept-bulk", "bulk-confirm"])
    accept_suggestions(screen, list(screen.shown), golds, tally, threshold=threshold, unseen=True)
    screen.refresh()


def annotate_pair(
    aligner: Aligner, pair: GoldPair, similarity: np.ndarray | None, strategy: str, threshold: PrecisionEstimate | None = None
) -> Tally:
    """Keys to reach ``pair``'s gold alignment with ``strategy`` (see the module docstring); ``threshold``: the
    project's for bulk accept when it has one."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}")
    screen = Screen(aligner, pair, similarity)
    golds = gold_labels(pair)
    tally = Tally(pairs=1, simple=len(golds), links=sum(len(g) for g in golds))
    accepted_rows: set[int] = set()
    bulk = strategy.startswith("bulk") and threshold is not None
    picker = strategy.endswith("picker")
    if bulk:
        accept_bulk(screen, threshold.threshold, golds, tally)
    moved = False  # the last sentence's key moved on to this one already
    for j, gold in enumerate(golds):
        if bulk and j in screen.labelled():
            continue  # trusted: J passes it
        if not moved:
            tally.keys["next-open" if bulk else "next-simple"] += 1
        before = dict(screen.labels)
        if strategy == "paragraph" and screen.rows[j] not in accepted_rows:
            accepted_rows.add(screen.rows[j])
            accept_row(screen, screen.rows[j], golds, tally)
        moved = say_links(screen, j, gold, tally, picker=picker)
        if screen.labels != before:
            screen.refresh()
    tally.keys["finish"] += 1
    if len(screen.labelled()) < len(golds):
        tally.keys["finish-confirm"] += 1
    check_reached(screen, golds, tally)
    tally.answers = answered(screen)
    return tally


def check_reached(screen: Screen, golds: list[dict[int, str]], tally: Tally) -> None:
    """The labels the pair ends with are the gold ones (unlabelled pairs count as not aligned once it is done), but
    for what bulk accept got wrong on sentences nobody looked at again (counted in ``tally``)."""
    linked = {(j, i): label for (j, i), label in screen.labels.items() if label in LINKED}
    gold = {(j, i): label for j, links in enumerate(golds) for i, label in links.items()}
    unseen = {j for j, _ in screen.bulk}
    tally.missed = sum(1 for (j, i) in gold if j in unseen and (j, i) not in linked)
    differing = {key for key in linked.keys() | gold.keys() if linked.get(key) != gold.get(key)}
    if any(j not in unseen for j, _ in differing):
        raise AssertionError(f"the simulated annotator did not reach the gold alignment of {screen.pair.pair_id}")


def answered(screen: Screen) -> list[tuple[float, bool]]:
    """The stored run's suggestions of the pair, each with its confidence and whether the final label is the
    suggested one (unlabelled: not aligned); those bulk accept labelled are no evidence and are left out."""
    return [
        (entry["confidence"] or 0.0, screen.labels.get((j, entry["complex"])) == entry["predicted"])
        for j, entries in screen.first.items()
        for entry in entries
        if entry["predicted"] in LINKED and (j, entry["complex"]) not in screen.bulk
    ]


def key_name(action: str) -> str:
    return ACTION_KEY.get(action) or DIALOG_KEYS[action]
