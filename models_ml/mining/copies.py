"""Near-copies: the form mined texts are compared in, and the MUSS filter that LHA applies too."""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein


def comparable(text: str) -> str:
    """Case-folded with whitespace runs collapsed: the form the filters compare."""
    return " ".join(text.casefold().split())


def near_identical(source_text: str, target_text: str, *, min_levenshtein: float) -> bool:
    """Whether the two texts are near-copies: a normalised character Levenshtein distance (edits / longer length) of
    their comparable forms below ``min_levenshtein``, MUSS's "near_identical" (``LHAConfig.min_levenshtein`` too).
    Containment is not checked here: a simple sentence inside its complex one is a deletion, a simplification LHA is
    there to find (MUSS drops it as "contained")."""
    return Levenshtein.normalized_distance(comparable(source_text), comparable(target_text)) < min_levenshtein
