"""Stop words and content words: the word-overlap side of LHA's filter and of the learned pair scorer's features.

The lists are small and hand-made (function words only, lowercase), one per language the
mining and the features support.
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "content_words", "unigram_overlap"]

# Small built-in stop-word lists (function words only); lowercase. Text, not list literals, to stay readable.
STOP_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        """a about above after again against all am an and any are as at be because been before being below
        between both but by can could did do does doing down during each few for from further had has have
        having he her here hers herself him himself his how i if in into is it its itself just me more most
        my myself no nor not now of off on once only or other our ours ourselves out over own same she
        should so some such than that the their theirs them themselves then there these they this those
        through to too under until up very was we were what when where which while who whom why will with
        would you your yours yourself yourselves s t don also""".split()  # noqa: SIM905 - a stop-word list reads best as prose
    ),
    "de": frozenset(
        """aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes auch
        auf aus bei bin bis bist da damit dann das dass dein deine deinem deinen deiner dem den denn der des
        dessen dich die dir du dies diese diesem diesen dieser dieses doch dort durch ein eine einem einen
        einer eines er es etwas euch euer eure für gegen hab habe haben hat hatte hatten hier hin hinter ich
        ihm ihn ihnen ihr ihre ihrem ihren ihrer im in indem ins ist jede jedem jeden jeder jedes jene jetzt
        kann kein keine keinem keinen keiner können könnte man manche mein meine meinem meinen meiner mich
        mir mit muss musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen seiner
        seit sich sie sind so solche soll sollte sondern sonst über um und uns unser unsere unter viel vom
        von vor war waren warst was weil welche welchem welchen welcher welches wenn wer werde werden wie
        wieder will wir wird wirst wo wollen wollte worden wurde wurden würde würden zu zum zur zwar
        zwischen""".split()  # noqa: SIM905 - as above
    ),
}
_WORD = re.compile(r"[^\W_]+")  # letter/digit runs; punctuation and underscores separate words


def content_words(text: str, language: str) -> set[str]:
    """Lowercased word types of ``text`` without punctuation, numbers (any token with a digit) and stop words."""
    if language not in STOP_WORDS:
        raise ValueError(f"unknown language {language!r}; known: {sorted(STOP_WORDS)}")
    stop = STOP_WORDS[language]
    return {w for w in _WORD.findall(text.lower()) if w not in stop and not any(ch.isdigit() for ch in w)}


def unigram_overlap(source_text: str, target_text: str, language: str) -> float:
    """|set(y) & set(x)| / |set(y)|, y = target content words; 0.0 when the target has none."""
    source_words, target_words = content_words(source_text, language), content_words(target_text, language)
    return len(target_words & source_words) / len(target_words) if target_words else 0.0
