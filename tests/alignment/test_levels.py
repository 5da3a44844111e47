"""The level rules (alignment/levels.py): schemes, readability and the decided order with its reasons. No database."""

from __future__ import annotations

import pytest

from alignment.levels import (
    Constraint,
    Readability,
    level_order_decide,
    level_order_parse,
    level_order_refusal,
    level_pairs,
    readability_of_text,
    scheme_verdict,
)

COMPLEX_TEXT = (
    "Die Behörden empfehlen den Anwohnerinnen und Anwohnern, Keller und tiefer gelegene Räume rechtzeitig zu räumen.\n\n"
    "Erst zu Beginn der neuen Woche dürfte sich die Wetterlage nach Einschätzung der Meteorologen spürbar beruhigen."
)
SIMPLE_TEXT = "Räumen Sie Ihren Keller aus.\nDas Wetter wird am Montag besser.\n\nHören Sie Radio."
NO_TEXT = Readability()


def _no_readability(level: str) -> Readability:
    raise AssertionError(f"readability asked for {level!r}: a scheme should have decided")


@pytest.mark.parametrize(
    ("first", "second", "scheme"),
    [
        ("C2", "A2", "CEFR levels"),
        ("b1", "A1", "CEFR levels"),
        ("cefr-B2", "Level B1", "CEFR levels"),
        ("original", "A2", "CEFR levels"),
        ("adv", "ele", "English reading levels"),
        ("Intermediate", "beginner", "English reading levels"),
        ("Alltagssprache", "Leichte Sprache", "German plain-language levels"),
        ("Einfache_Sprache", "LS", "German plain-language levels"),
        ("standard", "einfache-sprache", "German plain-language levels"),
        ("0", "3", "numbers (0 is the original)"),
        ("2", "10", "numbers (0 is the original)"),
    ],
)
def test_a_known_scheme_ranks_its_levels_most_complex_first(first, second, scheme):
    assert scheme_verdict(first, second) == (True, scheme)
    assert scheme_verdict(second, first) == (False, scheme)


@pytest.mark.parametrize(("first", "second"), [("A2", "adv"), ("B1", "ES"), ("ele", "3"), ("foo", "bar"), ("A2", "a2"), ("nan", "1")])
def test_levels_of_different_schemes_or_unknown_ones_are_not_ranked(first, second):
    assert scheme_verdict(first, second) is None


def test_readability_counts_words_sentences_and_long_words_and_a_line_ends_a_sentence():
    counted = readability_of_text("Die Meteorologen warnen. Es regnet!\nKeine Satzzeichen hier\n\n")
    assert counted == Readability(words=8, sentences=3, long_words=2)  # "Meteorologen", "Satzzeichen"
    assert counted.score == pytest.approx(8 / 3 + 25)
    hard, easy = readability_of_text(COMPLEX_TEXT), readability_of_text(SIMPLE_TEXT)
    assert hard.score > easy.score and hard.words_per_sentence > 2 * easy.words_per_sentence


def test_a_new_corpus_of_one_scheme_is_ordered_by_the_scheme_without_reading_its_text():
    decided = level_order_decide(["A2", "C2", "B1"], readability=_no_readability)
    assert decided.order == ["C2", "B1", "A2"]
    assert decided.notes == ["Level order, most complex first: C2, B1, A2.", "C2 › B1 › A2: CEFR levels, a known scheme."]
    assert decided.basis("C2", "A2") == "CEFR levels"


def test_unknown_levels_are_ordered_by_readability_and_the_reason_gives_the_figures():
    texts = {"anfang": SIMPLE_TEXT, "profi": COMPLEX_TEXT}
    decided = level_order_decide(["anfang", "profi"], readability=lambda level: readability_of_text(texts[level]))
    assert decided.order == ["profi", "anfang"]  # not the alphabetical order the old sort key used
    reason = decided.notes[1]
    assert reason.startswith("profi › anfang: 'profi' and 'anfang' are not levels of one known scheme; 'profi' reads harder (LIX ")
    assert "words per sentence" in reason and reason.endswith("so it is the complex side.")
    assert decided.basis("profi", "anfang") == "readability"


def test_constraints_are_kept_and_the_other_levels_are_placed_around_them():
    pairs_first = Constraint(("adv", "ele"), "the corpus's existing pairs")
    decided = level_order_decide(["ele", "int", "adv"], constraints=[pairs_first], readability=_no_readability)
    assert decided.order == ["adv", "int", "ele"]
    yours = Constraint(("A2", "C2"), "your order")  # the user turned CEFR round on purpose
    decided = level_order_decide(["C2", "A2"], constraints=[yours], readability=_no_readability)
    assert decided.order == ["A2", "C2"] and decided.notes[1] == "A2 › C2: your order."


def test_a_tie_in_readability_is_broken_by_name_so_the_order_never_depends_on_input_order():
    for levels in (["b", "a"], ["a", "b"]):
        assert level_order_decide(levels, readability=lambda level: NO_TEXT).order == ["a", "b"]


def test_pairs_are_every_combination_or_neighbours_only():
    assert level_pairs(["C2", "B1", "A2"], adjacent=False) == [("C2", "B1"), ("C2", "A2"), ("B1", "A2")]
    assert level_pairs(["C2", "B1", "A2"], adjacent=True) == [("C2", "B1"), ("B1", "A2")]


def test_a_level_order_is_parsed_from_commas_and_bad_ones_are_refused_with_the_reason():
    assert level_order_parse(" C2 , A2 ") == ("C2", "A2") and level_order_parse("  ") == ()
    for text, reason in [
        ("C2,,A2", "level 2 is empty"),
        ("C2, A2, C2", "level 'C2' is named twice"),
        ("x" * 33, "longer than 32 characters"),
        (",".join(str(n) for n in range(51)), "51 levels; at most 50"),
    ]:
        with pytest.raises(ValueError, match=reason):
            level_order_parse(text)


def test_a_level_order_naming_a_level_the_files_lack_is_refused_with_a_hint():
    assert level_order_refusal(("C2", "A2"), ["A2", "C2"]) is None
    assert level_order_refusal(("c2", "A2"), ["A2", "C2"]) == (
        "'c2' is not a level of the files (they have: A2, C2); names are case-sensitive: did you mean 'C2'?"
    )
    assert level_order_refusal(("B1",), []) == "'B1' is not a level of the files (they have: none could be read)"
