"""Complex → simple training pairs from aligned groups, the simplification phenomena, BLEU and GLEU.

A group is a connected set of aligned or partially aligned links between complex and simple
sentences of one document pair (:func:`models_ml.data.io.connected_groups`), so an n:m alignment
becomes one training pair: its complex sentences joined in document order → its simple
sentences joined likewise.

Phenomena follow Jiang et al. (2020), Table 1, counted over groups:

- copying (1-1): one complex, one simple sentence, identical after whitespace normalisation;
- rephrasing (1-1): one complex, one simple sentence, not identical;
- splitting (1-n): one complex sentence, several simple ones;
- merging (n-1): several complex sentences, one simple one;
- fusion (m-n): several on both sides;
- deletion (1-0): a complex sentence with no aligned or partial link, counted only in complete
  document pairs (verified or imported), where an unlinked sentence is known to be unaligned.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sacrebleu.metrics import BLEU
from sacrebleu.metrics.helpers import extract_all_word_ngrams
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

from annotation.export.selection import PairExport, clean_text
from annotation.labels import LINKED_LABELS
from models_ml.data.io import AlignmentGroup, connected_groups

PHENOMENA = ("rephrasing", "copying", "splitting", "merging", "fusion", "deletion")
METRICS = ("bleu", "gleu")
_BLEU = BLEU(effective_order=True)  # sentence-level BLEU, as sacrebleu.sentence_bleu
_TOKENIZE = _BLEU.tokenizer  # a Tokenizer13a; BLEU's own instance, so its cache (per instance) serves GLEU too
_ORDER = 4  # n-gram orders 1..4, for BLEU (sacrebleu's default) and GLEU


@dataclass(frozen=True)
class SimplificationPair:
    complex: str
    simple: str
    label: str  # aligned | partial (partial when any link of the group is partial)
    phenomenon: str
    complex_indices: tuple[int, ...]
    simple_indices: tuple[int, ...]
    identical: bool
    bleu: float
    gleu: float


def pair_groups(exported: PairExport) -> list[AlignmentGroup]:
    """The n:m groups of the pair's aligned and partial items (indices are sentence positions in each document)."""
    return connected_groups((item.complex.index, item.simple.index, item.label) for item in exported.items if item.label in LINKED_LABELS)


def phenomenon(group: AlignmentGroup, identical: bool) -> str:
    complex_count, simple_count = len(group.complex), len(group.simple)
    if complex_count == 1 and simple_count == 1:
        return "copying" if identical else "rephrasing"
    if complex_count == 1:
        return "splitting"
    if simple_count == 1:
        return "merging"
    return "fusion"


def sentence_bleu(hypothesis: str, reference: str) -> float:
    """sacrebleu's sentence BLEU (0..100) of the simple side against the complex side."""
    return float(_BLEU.sentence_score(hypothesis, [reference]).score)


def _ngrams(tokens: list[str], order: int) -> Counter:
    return Counter(tuple(tokens[i : i + order]) for i in range(len(tokens) - order + 1))


def sentence_gleu(hypothesis: str, reference: str, *, max_order: int = 4) -> float:
    """Google's sentence GLEU (Wu et al. 2016), 0..100: min(precision, recall) of all 1..4-grams together.

    Tokens come from sacrebleu's 13a tokenizer, as BLEU's do. Two empty sentences score 0.
    """
    hypothesis_tokens, reference_tokens = _TOKENIZE(hypothesis).split(), _TOKENIZE(reference).split()
    matches = hypothesis_total = reference_total = 0
    for order in range(1, max_order + 1):
        hypothesis_grams, reference_grams = _ngrams(hypothesis_tokens, order), _ngrams(reference_tokens, order)
        matches += sum((hypothesis_grams & reference_grams).values())
        hypothesis_total += sum(hypothesis_grams.values())
        reference_total += sum(reference_grams.values())
    if not hypothesis_total or not reference_total:
        return 0.0
    return 100.0 * min(matches / hypothesis_total, matches / reference_total)


def sentence_scores(hypothesis: str, reference: str) -> tuple[float, float]:
    """(:func:`sentence_bleu`, :func:`sentence_gleu`) of the same sentences, exactly, for half the work.

    Both tokenize with 13a and count the 1..4-grams of each side, so that is done once: BLEU's
    statistics (sacrebleu's ``_compute_segment_statistics`` over ``extract_all_word_ngrams``, then
    its public ``BLEU.compute_bleu``) and GLEU's sums are the same integers as computed apart.
    BLEU strips trailing whitespace before tokenizing and GLEU does not; a side with trailing
    whitespace (never, after :func:`~annotation.export.selection.clean_text`) takes the two
    functions. tests/annotation/test_export_identical.py checks the two paths agree.
    """
    if hypothesis != hypothesis.rstrip() or reference != reference.rstrip() or _BLEU.lowercase or _BLEU.max_ngram_order != _ORDER:
        return sentence_bleu(hypothesis, reference), sentence_gleu(hypothesis, reference)
    hypothesis_grams, hypothesis_length = extract_all_word_ngrams(_TOKENIZE(hypothesis), 1, _ORDER)
    reference_grams, reference_length = extract_all_word_ngrams(_TOKENIZE(reference), 1, _ORDER)
    correct, total = [0] * _ORDER, [0] * _ORDER
    for gram, count in hypothesis_grams.items():
        total[len(gram) - 1] += count
        if gram in reference_grams:
            correct[len(gram) - 1] += min(count, reference_grams[gram])
    bleu = _BLEU.compute_bleu(
        correct, total, hypothesis_length, reference_length, smooth_method=_BLEU.smooth_method, smooth_value=_BLEU.smooth_value,
        effective_order=_BLEU.effective_order, max_ngram_order=_BLEU.max_ngram_order,
    ).score  # fmt: skip
    matches, hypothesis_total, reference_total = sum(correct), sum(total), sum(reference_grams.values())
    if not hypothesis_total or not reference_total:
        return float(bleu), 0.0
    return float(bleu), 100.0 * min(matches / hypothesis_total, matches / reference_total)


def simplification_pairs(exported: PairExport, groups: list[AlignmentGroup] | None = None) -> list[SimplificationPair]:
    """Every group of the pair as a complex → simple pair, with its phenomenon and scores (no filtering)."""
    complex_text = {row.index: row.text for row in exported.complex_sentences}
    simple_text = {row.index: row.text for row in exported.simple_sentences}
    result = []
    for group in pair_groups(exported) if groups is None else groups:
        complex_side = " ".join(complex_text[i] for i in group.complex)
        simple_side = " ".join(simple_text[i] for i in group.simple)
        identical = clean_text(complex_side) == clean_text(simple_side)
        bleu, gleu = sentence_scores(simple_side, complex_side)
        result.append(SimplificationPair(
            complex=complex_side, simple=simple_side, label=group.label,
            phenomenon=phenomenon(group, identical), complex_indices=group.complex, simple_indices=group.simple,
            identical=identical, bleu=round(bleu, 4), gleu=round(gleu, 4),
        ))  # fmt: skip
    _forget_tokenizations()
    return result


def _forget_tokenizations() -> None:
    """Empty sacrebleu's tokenizer caches (functools.lru_cache, 2**16 sentences each, shared by the process).

    They only help within a document pair (BLEU and GLEU tokenize the same sentences), and
    filled by an export they hold tens of MB of sentences; cleared after each pair, an export's
    memory stays at one pair's worth. Results are the same either way.
    """
    for tokenizer in (Tokenizer13a, TokenizerRegexp):
        clear = getattr(tokenizer.__call__, "cache_clear", None)
        if clear is not None:
            clear()


def phenomena_counts(exported: PairExport, groups: list[AlignmentGroup], pairs: list[SimplificationPair]) -> Counter:
    counts = Counter(pair.phenomenon for pair in pairs)
    if exported.complete:
        linked = {index for group in groups for index in group.complex}
        counts["deletion"] += sum(1 for row in exported.complex_sentences if row.index not in linked)
    return counts


def keep(pair: SimplificationPair, options: dict) -> bool:
    """Whether the training set keeps the pair under the export's drop-identical and score-range options."""
    if options.get("drop_identical") and pair.identical:
        return False
    metric = options.get("score_metric")
    if metric:
        score = getattr(pair, metric)
        if score < options["score_min"] or score > options["score_max"]:
            return False
    return True
