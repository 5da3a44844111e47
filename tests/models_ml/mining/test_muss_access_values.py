"""The ACCESS attributes keep their values: pinned on varied texts with the code before its speed-up.

The values below were computed by ``word_rank_score`` and ``access_attributes`` as they were before the
per-language content-word table, the pure-Python third quartile and the per-text cache. What is pure arithmetic
(the character ratio, the replace-only Levenshtein similarity) is compared exactly (``==``). What goes through
``log1p`` is compared exactly with the definition computed on the machine that runs the test (NumPy's
``quantile`` of ``log1p`` of the ranks), and with the pinned value to 1e-12: ``log1p`` is not correctly rounded
everywhere (on an AVX2 machine ``log1p(5560)`` comes out one unit in the last place away from the AVX-512 one
the values were pinned on), so the last bit is the CPU's, while a change in tokenisation, rank lookup or
interpolation moves the value far more than that (CONTRIBUTING.md, "Tests that depend on numerics").
"""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest
import wordfreq

from models_ml.mining import muss
from models_ml.mining.muss import access_attributes, word_rank_score

WORD_RANK_SCORES = [
    ("The physician administered the medication, twice.", "en", 8.705559853123528),
    ("In 1998, the council's budget (approved 12-3) was rejected!", "en", 8.623166965680076),
    ("the and of", "en", 11.51293546492023),  # stop words only: log(1 + vocabulary size)
    ("Ünïcödé naïve café — résumé coöperation.", "en", 10.337445365514192),
    ("Der Mediziner verabreichte das Medikament.", "de", 10.365097338498554),
    ("river river river house family season film team", "en", 6.90875477931522),
    ("Photosynthesis converts sunlight into chemical energy.", "en", 9.482197894080992),
    ("Il était une fois une princesse très gentille.", "fr", 8.211848148790262),
    ("t123x the of and school city state world war area years part may later three.", "en", 5.54846252747334),
    ("A", "en", 11.51293546492023),
    ("An ox, a yak and a gnu met in the UK; DNA tests, 3 km.", "en", 9.776000706587883),  # short content words
]

ATTRIBUTES = [
    (
        ("The physician administered the medication, twice.", "The doctor gave the medicine two times.", "en"),
        (0.7959183673469388, 0.7948717948717949, 0.83673887426249),
    ),
    (
        ("In 1998, the council's budget (approved 12-3) was rejected!", "The city council rejected the budget in 1998.", "en"),
        (0.7627118644067796, 0.3555555555555555, 0.880566566947354),
    ),
    (("the and of", "Photosynthesis converts sunlight into chemical energy.", "en"), (5.4, 0.7, 0.8236125289656258)),
    (("Ünïcödé naïve café — résumé coöperation.", "A simple cafe summary.", "en"), (0.55, 0.5, 0.8210196714053666)),
    (
        ("Der Mediziner verabreichte das Medikament.", "Der Arzt gab die Medizin.", "de"),
        (0.5952380952380952, 0.6799999999999999, 0.7146312019081833),
    ),
    (("", "Something.", "en"), (None, 1.0, 0.43636833856612656)),
    (("Some text here.", "Other words there.", "xx"), (1.2, 0.5333333333333333, None)),
    (
        ("An ox, a yak and a gnu met in the UK; DNA tests, 3 km.", "Oxen and yaks met.", "en"),
        (0.3333333333333333, 0.7222222222222222, 1.1065772565399172),
    ),
    (
        ("river river river house family season film team", "the river and the house of the family", "en"),
        (0.7872340425531915, 0.6756756756756757, 0.8852365693363061),
    ),
]


@pytest.fixture(autouse=True)
def no_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(muss, "load_dependency_parser", lambda language: None)  # the pinned values had no spaCy model


PINNED = 1e-12  # relative: far below any change of tokenisation, rank or interpolation, above a log1p's last bit


def word_rank_score_by_definition(text: str, language: str) -> float:
    """word_rank_score as it was written before its speed-up: NumPy's quantile of log1p of the content words' ranks."""
    ranks = muss._word_ranks(language)
    content = [
        ranks[token]
        for token in wordfreq.tokenize(text, language)
        if ranks.get(token, -1) >= muss.STOP_WORD_COUNT and any(char.isalpha() for char in token)
    ]
    if not content:
        return float(np.log1p(len(ranks)))
    return float(np.quantile([float(np.log1p(rank)) for rank in content], 0.75))


@pytest.mark.parametrize(("text", "language", "expected"), WORD_RANK_SCORES)
def test_word_rank_score_keeps_its_value(text: str, language: str, expected: float) -> None:
    by_definition = word_rank_score_by_definition(text, language)
    assert word_rank_score(text, language) == by_definition  # bit for bit, on this machine
    assert word_rank_score(text, language) == by_definition  # a second call (from the per-text cache) too
    assert by_definition == pytest.approx(expected, rel=PINNED, abs=0)


@pytest.mark.parametrize(("pair", "expected"), ATTRIBUTES)
def test_access_attributes_keep_their_exact_values(pair: tuple[str, str, str], expected: tuple) -> None:
    attributes = access_attributes(*pair)
    char_ratio, levenshtein, word_rank_ratio = expected
    assert (attributes["char_ratio"], attributes["levenshtein_replace_only"]) == (char_ratio, levenshtein)
    if word_rank_ratio is None:
        assert attributes["word_rank_ratio"] is None
    else:
        source, target, language = pair
        assert attributes["word_rank_ratio"] == word_rank_score(target, language) / word_rank_score(source, language)
        assert attributes["word_rank_ratio"] == pytest.approx(word_rank_ratio, rel=PINNED, abs=0)
    assert attributes["dependency_depth_ratio"] is None


def test_third_quartile_equals_numpys_linear_quantile_bit_for_bit() -> None:
    rng = random.Random(7)
    for size in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 31, 64, 100]:
        for _ in range(50):
            values = [float(np.log1p(rng.randrange(100_000))) for _ in range(size)]
            assert muss._third_quartile(values) == float(np.quantile(values, 0.75)), values


def noisy_by_definition(text: str, max_punctuation: float) -> bool:
    """is_noisy as it was written before the punctuation set: category P* among the non-space characters."""
    visible = [char for char in text if not char.isspace()]
    return not visible or sum(unicodedata.category(char).startswith("P") for char in visible) / len(visible) > max_punctuation


def test_is_noisy_counts_punctuation_as_before_on_random_unicode_text() -> None:
    rng = random.Random(11)
    alphabet = "abc XYZ 123 .,;:!?-–—'\"«»„“¿¡。、・()[]{}…\t\n\u00a0\u3000éß漢字ك" + "".join(
        chr(rng.randrange(0x20, 0x3000)) for _ in range(200)
    )
    texts = ["", "   ", "...", "a.", "Hello, world!", "« » „ “ ¿ 。"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 120))) for _ in range(2000)
    ]
    for text in texts:
        for bound in (0.0, 0.1, 0.3, 1.0):
            assert muss.is_noisy(text, bound) == noisy_by_definition(text, bound), (text, bound)
