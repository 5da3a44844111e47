"""The keys of the annotation screen and of queue mode: one table, read by the help dialogs and by the scripts.

Each row says which keys do what, in which view: ``focus`` (one simple sentence and its
candidates), ``alignment`` (the whole alignment of the pair as groups), ``both`` (the screen in
either view) or ``queue``. The help dialog (``?``) is rendered from :func:`help_rows`, and the
page hands :func:`keymap` to its script (``json_script``), which binds exactly these keys to its
actions: what the dialog lists is what is bound. Documentation can read :data:`SCREEN_KEYS` and
:data:`QUEUE_KEYS` too.
"""

from __future__ import annotations

from dataclasses import dataclass

FOCUS, ALIGNMENT, BOTH, QUEUE = "focus", "alignment", "both", "queue"
SCREEN_VIEWS = ((FOCUS, "Focus view"), (ALIGNMENT, "Alignment view"), (BOTH, "Both views"))


@dataclass(frozen=True)
class KeyRow:
    """Keys and the action each one runs (as ``event.key`` spells it, so ``A`` is Shift+a), and what they do."""

    bindings: tuple[tuple[str, str], ...]  # (key, action)
    text: str
    view: str

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.bindings)


SCREEN_KEYS: tuple[KeyRow, ...] = (
    KeyRow(
        (("j", "next-simple"), ("k", "prev-simple")), "next / previous simple sentence, with its best suggestion as the current pair", FOCUS
    ),
    KeyRow((("J", "next-open"), ("K", "prev-open")), "next / previous simple sentence with no label of yours yet", FOCUS),
    KeyRow(
        (("l", "next-candidate"), ("h", "prev-candidate")), "next / previous candidate: suggestions, then near misses, then the rest", FOCUS
    ),
    KeyRow((("g", "jump"),), "jump list: link any complex sentence (type its number or words, ↑/↓, Enter)", FOCUS),
    KeyRow(
        (("a", "label-aligned"), ("p", "label-partial"), ("n", "label-not_aligned")),
        "label the current pair aligned / partially aligned / not aligned (so j a accepts a suggestion)",
        FOCUS,
    ),
    KeyRow((("Enter", "accept"),), "accept the suggestion's own label (aligned or partial)", FOCUS),
    KeyRow(
        tuple((str(k), f"pick-{k}") for k in range(1, 6)),
        "link the numbered candidate (its suggested label, else aligned), then on to the next sentence with no label of yours",
        FOCUS,
    ),
    KeyRow((("0", "pick-none"),), "no partner: the sentence's suggestions and links all not aligned, then on to the next", FOCUS),
    KeyRow((("j", "next-row"), ("k", "prev-row")), "next / previous row: an aligned group or an unaligned sentence", ALIGNMENT),
    KeyRow((("l", "next-sentence"), ("h", "prev-sentence")), "next / previous sentence of the row (the cursor)", ALIGNMENT),
    KeyRow(
        (("a", "group-aligned"), ("p", "group-partial")),
        "label every link of the group aligned / partial (accepts its suggestions)",
        ALIGNMENT,
    ),
    KeyRow((("n", "group-dissolve"),), "dissolve the group: all its sentences unaligned", ALIGNMENT),
    KeyRow((("m", "merge-next"), ("M", "merge-prev")), "merge the row with the next / previous row", ALIGNMENT),
    KeyRow((("b", "split"),), "split the group before the cursor sentence (the other side is cut in proportion)", ALIGNMENT),
    KeyRow((("x", "unalign-sentence"),), "mark the cursor sentence unaligned", ALIGNMENT),
    KeyRow((("A", "accept-paragraph"),), "accept every remaining suggestion of the current paragraph row", BOTH),
    KeyRow(
        (("B", "accept-bulk"),),
        "accept every suggestion of the pair at or above the project's confidence threshold (asks first, with the estimated precision)",
        BOTH,
    ),
    KeyRow(
        (("e", "edit-sentence"),),
        "fix the sentence split: split the selected sentence (either document) at a word, merge it with the next, or undo the last such edit",
        BOTH,
    ),
    KeyRow((("v", "toggle-view"),), "switch between the focus view and the alignment view", BOTH),
    KeyRow((("u", "undo"),), "undo your last change in this pair (a whole edit at once)", BOTH),
    KeyRow((("d", "finish"),), "done: mark this pair done and open your next pair", BOTH),
    KeyRow((("P", "paragraphs"),), "check the paragraphs (step 1): which paragraphs align", BOTH),
    KeyRow((("s", "skip"),), "skip this document pair and open your next one", BOTH),
    KeyRow((("f", "flag"),), "flag this document pair for a manager (again: remove the flag)", BOTH),
    KeyRow((("c", "comment"),), "comment on this document pair", BOTH),
    KeyRow((("i", "guidelines"),), "show / hide the project's guidelines", BOTH),
    KeyRow((("?", "help"), ("Escape", "close")), "show / hide this list (Esc closes any dialog)", BOTH),
)

QUEUE_KEYS: tuple[KeyRow, ...] = (
    KeyRow((("a", "aligned"),), "the two sentences are aligned", QUEUE),
    KeyRow((("p", "partial"),), "they are partially aligned", QUEUE),
    KeyRow((("n", "not_aligned"),), "they are not aligned", QUEUE),
    KeyRow((("s", "skip"),), "skip this item (it leaves your queue)", QUEUE),
    KeyRow((("u", "undo"),), "undo your last answer or skip, and show that item again", QUEUE),
    KeyRow((("i", "guidelines"),), "show / hide the project's guidelines", QUEUE),
    KeyRow((("?", "help"), ("Escape", "close")), "show / hide this list (Esc closes it)", QUEUE),
)

KEY_NAMES = {"Escape": "Esc", "Enter": "Enter"}


def help_rows(rows: tuple[KeyRow, ...], view: str) -> list[dict[str, object]]:
    """The rows of one view for the help dialog: ``keys`` (as printed on the key caps) and ``text``."""
    return [{"keys": [KEY_NAMES.get(key, key) for key in row.keys], "text": row.text} for row in rows if row.view == view]


def keymap(rows: tuple[KeyRow, ...]) -> dict[str, dict[str, str]]:
    """view -> key -> action, for the page's script; rows for ``both`` views go into each screen view."""
    views = (QUEUE,) if rows is QUEUE_KEYS else (FOCUS, ALIGNMENT)
    result: dict[str, dict[str, str]] = {view: {} for view in views}
    for row in rows:
        for view in views if row.view == BOTH else (row.view,):
            for key, action in row.bindings:
                if key in result[view]:
                    raise ValueError(f"key {key!r} is bound twice in the {view} view")
                result[view][key] = action
    return result
