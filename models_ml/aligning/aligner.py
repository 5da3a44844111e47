"""The sentence aligner: similarity measure -> paragraph alignment -> neural CRF -> labelled groups.

Why a separate module: the pieces (``similarity``, ``paragraphs``, ``crf``) are tested on
their own; this file only composes them and owns the calibration that lets an *untrained*
CRF give sensible alignments from raw cosine similarities.

Pipeline of :meth:`Aligner.align` for m simple and n complex sentences:

1. Score every (simple, complex) pair with the configured measure: one float32 (m, n)
   matrix, the only O(m n) array (2000 x 2000 = 16 MB; documents much larger than that
   belong to LHA's nearest-neighbour search).
2. Align paragraphs (``paragraph_variant`` "newsela" | "wikipedia"), unless the variant is
   "none" or either side has a single paragraph. Sentence pairs outside every aligned
   paragraph group are masked: their similarity is set to ``masked_similarity`` (-1, below
   any cosine) before the CRF sees them.
3. Run the CRF per aligned paragraph group (a block of simple rows x complex columns).
   Decoding blocks instead of the whole masked matrix gives the same answer for pairs that
   lie in one block, and keeps the CRF's O(m K^2) cost and (K+1)^2 transition table small:
   a 2000-sentence document in paragraphs of ~20 sentences is 100 small CRFs, not one
   with 2000 x 3 span states. Simple sentences in no block are unaligned. A block with more
   than ``dense_state_limit`` CRF states (about 500 complex sentences with spans up to 3)
   is decoded on a pruned lattice (:mod:`models_ml.aligning.crf_pruned`: null + the ``beam`` best
   spans per simple sentence), so a 2,000 x 2,000 document without paragraph breaks costs
   O(m * beam^2) time and O(m * n) memory, not a (3n)^2 transition table.
4. Turn Viterbi states into groups (:func:`models_ml.aligning.crf.states_to_groups`) and score each
   group by the mean CRF marginal of its simple sentences' chosen states. A group is
   "partial" when that score is below ``partial_threshold``, else "aligned".

Calibration of the untrained CRF (see :class:`AlignerConfig`): the CRF sees
``emission_scale * sim``; a fresh model gets its null emission set to
``emission_scale * null_score`` (a similarity threshold: a simple sentence whose best
similarity is below it stays unaligned), a bias of ``emission_scale * span_bonus`` on span
states of length >= 2 with the span's *minimum* similarity as emission (so a simple sentence
close to two neighbouring complex sentences picks both: a merge), and transitions of exactly
zero (the FFNN's output layer is zeroed), so untrained decoding is a per-sentence arg-max
and splits come from neighbours choosing the same complex sentence. Training
(:mod:`models_ml.aligning.train`, on the blocks of :meth:`Aligner.blocks`) starts from this calibration
and changes all of these; a loaded model keeps its trained parameters.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models_ml.aligning.aligner_config import LEARNED, LEXICAL_MEASURES, AlignerConfig
from models_ml.aligning.clamp import Fixed, allowed_states, fixed_check
from models_ml.aligning.crf import NeuralCRF, groups_from_links, states_to_groups
from models_ml.aligning.crf_pruned import decode_pruned
from models_ml.aligning.paragraphs import (
    ParagraphGroup,
    align_paragraphs_newsela,
    align_paragraphs_wikipedia,
    sentence_pair_mask,
)
from models_ml.aligning.refit import refit_blocks
from models_ml.data.checkpoint import ALIGNER_FILES, read_json, verify_checksums, write_checksums
from models_ml.data.io import AlignmentGroup
from models_ml.similarity.measures import SimilarityMeasure, build_measure
from models_ml.similarity.pair_scorer import LearnedPairScorer, ScorerParameters

__all__ = ["Aligner", "AlignmentResult", "BlockPlan"]

MODEL_FILES = ALIGNER_FILES


@dataclass
class AlignmentResult:
    """What :meth:`Aligner.align` found for one document pair (m simple, n complex sentences).

    groups: predicted groups with score and label, ordered by first simple sentence.
    similarity: (m, n) float32 raw measure scores (row = simple sentence), before masking.
    paragraph_mask: (m, n) bool, True where the pair lies inside an aligned paragraph group.
    paragraph_groups: the aligned paragraph groups (one group covering everything when
        paragraphs were not aligned).
    chosen_complex: per simple sentence, the complex sentences of its Viterbi state (the
        span, in document indices); empty for the null state.
    state_marginals: (m,) float32 CRF marginal of each simple sentence's chosen state
        (for the null state too; 1.0 for sentences outside every paragraph group).
    pair_marginals: (m, n) float32, P(simple j's state covers complex i): the CRF's belief
        in each pair, summed over the span states containing i; 0 outside every block.
    """

    groups: list[AlignmentGroup]
    similarity: np.ndarray
    paragraph_mask: np.ndarray
    paragraph_groups: list[ParagraphGroup]
    chosen_complex: list[tuple[int, ...]]
    state_marginals: np.ndarray
    pair_marginals: np.ndarray


@dataclass
class BlockPlan:
    """Paragraph groups, the (m, n) bool mask of pairs inside them, and per group the block the
    CRF decodes: (rows (r,), cols (c,), similarities (r, c) with masked pairs at ``masked_similarity``)."""

    paragraph_groups: list[ParagraphGroup]
    mask: np.ndarray
    blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]


class Aligner:
    """Composes measure, paragraph aligner and CRF; see the module docstring for the pipeline.

    ``seed`` initialises the CRF's parameters (with a local generator). ``measure`` lets a
    caller inject an already built measure; otherwise it is built on first use, so an
    aligner for an empty document never loads an encoder.
    """

    def __init__(self, config: AlignerConfig | None = None, *, seed: int = 0, measure: SimilarityMeasure | None = None) -> None:
        self.config = config or AlignerConfig()
        self.device = self.config.device or _default_device()
        self.crf = NeuralCRF(self.config.crf, seed=seed)
        self._calibrate_untrained()
        self.crf.to(self.device).eval()
        self._measure = measure
        self._scorer_source: dict[str, Any] | None = None  # the config.scorer the built LearnedPairScorer came from

    def _calibrate_untrained(self) -> None:
        scale = self.config.emission_scale
        with torch.no_grad():
            self.crf.null_emission.fill_(scale * self.config.null_score)
            self.crf.span_weights.zero_()
            self.crf.span_weights[0, 0] = 1.0  # single sentence: its similarity, as in the paper
            self.crf.span_weights[1:, 1] = 1.0  # longer spans: their weakest member ...
            self.crf.span_bias[1:] = scale * self.config.span_bonus  # ... plus the merge bonus
            self.crf.transition_out.weight.zero_()  # untrained transitions are 0: no random prior
            self.crf.transition_out.bias.zero_()

    def copy(self) -> Aligner:
        """A copy with its own CRF weights (config is immutable and replaced, never edited); the measure
        and its encoder are shared, so copying never duplicates a transformer."""
        twin = copy.copy(self)
        twin.crf = copy.deepcopy(self.crf)
        return twin

    @property
    def uses_encoder(self) -> bool:
        """Whether scoring needs sentence vectors (an encoder, or vectors the caller passes)."""
        if self.config.measure == LEARNED:
            return self.config.scorer is not None and "embedding_cosine" in self.config.scorer["features"]
        return self.config.measure not in LEXICAL_MEASURES

    def load_encoder(self) -> Any:
        from models_ml.similarity.encoders import load_sentence_encoder

        return load_sentence_encoder(self.config.encoder, device=self.device)

    @property
    def measure(self) -> SimilarityMeasure:
        if self.config.measure == LEARNED:
            if self.config.scorer is None:
                raise ValueError("this aligner's pair scorer is not trained yet: train it, or pick another measure")
            if not isinstance(self._measure, LearnedPairScorer) or self._scorer_source != self.config.scorer:
                encoder = self._measure.encoder if isinstance(self._measure, LearnedPairScorer) else None
                parameters = ScorerParameters.from_dict(self.config.scorer)
                self._measure = LearnedPairScorer(parameters, encoder=encoder, encoder_factory=self.load_encoder)
                self._scorer_source = self.config.scorer
            return self._measure
        if self._measure is None:
            if self.config.measure in LEXICAL_MEASURES:
                self._measure = build_measure(self.config.measure)
            else:
                from models_ml.similarity.encoders import load_sentence_encoder

                encoder = load_sentence_encoder(self.config.encoder, device=self.device)
                self._measure = build_measure(self.config.measure, encoder=encoder)
        return self._measure

    def align(
        self,
        complex_sentences: Sequence[str],
        simple_sentences: Sequence[str],
        complex_paragraphs: Sequence[int] | None = None,
        simple_paragraphs: Sequence[int] | None = None,
        *,
        similarity: np.ndarray | None = None,
        fixed: Fixed | None = None,
        refit: bool = False,
    ) -> AlignmentResult:
        """Align one document pair; paragraph lists give each sentence's 0-based paragraph (None = one paragraph).

        ``similarity`` (m, n) replaces the measure's scores when the caller has them already
        (the app computes cosines from stored embeddings instead of re-encoding). ``fixed`` maps
        simple sentences whose links are known to their complex sentences (empty: unaligned):
        they keep exactly those links, and the rest is decoded given them
        (:mod:`models_ml.aligning.clamp`); ``refit`` then also fits a per-pair correction to them
        (:mod:`models_ml.aligning.refit`) before decoding.
        """
        n, m = len(complex_sentences), len(simple_sentences)
        complex_par = _paragraph_list(complex_paragraphs, n, "complex")  # (n,)
        simple_par = _paragraph_list(simple_paragraphs, m, "simple")  # (m,)
        if m == 0 or n == 0:
            return AlignmentResult(
                groups=[],
                similarity=np.zeros((m, n), dtype=np.float32),
                paragraph_mask=np.zeros((m, n), dtype=bool),
                paragraph_groups=[],
                chosen_complex=[() for _ in range(m)],
                state_marginals=np.ones(m, dtype=np.float32),
                pair_marginals=np.zeros((m, n), dtype=np.float32),
            )
        if similarity is None:
            similarity = self.measure.score(list(simple_sentences), list(complex_sentences))
        similarity = np.asarray(similarity, dtype=np.float32)
        if similarity.shape != (m, n):
            raise ValueError(f"similarity for measure {self.config.measure!r} has shape {similarity.shape}, expected {(m, n)}")
        plan = self.blocks(similarity, simple_par, complex_par)
        if fixed is not None:
            return self._align_clamped(plan, similarity, fixed_check(fixed, m, n), refit=refit)
        chosen: list[tuple[int, ...]] = [() for _ in range(m)]
        marginals = np.ones(m, dtype=np.float32)  # (m,)
        pair_marginals = np.zeros((m, n), dtype=np.float32)  # (m, n)
        raw_groups: list[tuple[list[int], list[int]]] = []
        for rows, cols, block in plan.blocks:
            local_groups, local_chosen, local_marginals, local_pairs = self._decode_block(block)  # block: (len(rows), len(cols))
            pair_marginals[np.ix_(rows, cols)] = local_pairs
            for complex_local, simple_local in local_groups:
                raw_groups.append(([int(cols[c]) for c in complex_local], [int(rows[s]) for s in simple_local]))
            for r, span in enumerate(local_chosen):
                chosen[rows[r]] = tuple(int(cols[c]) for c in span)
                marginals[rows[r]] = local_marginals[r]
        groups = [self._labelled(complex_ids, simple_ids, marginals) for complex_ids, simple_ids in raw_groups]
        groups.sort(key=lambda g: (g.simple[0], g.complex[0]))
        return AlignmentResult(groups, similarity, plan.mask, plan.paragraph_groups, chosen, marginals, pair_marginals)

    def _align_clamped(self, plan: BlockPlan, similarity: np.ndarray, fixed: dict[int, tuple[int, ...]], *, refit: bool) -> AlignmentResult:
        """:meth:`align` with known links: each block decoded with its known sentences clamped, groups from every sentence's links."""
        m, n = similarity.shape
        blocks = [(rows, cols, block, self._block_allowed(rows, cols, fixed)) for rows, cols, block in plan.blocks]
        if refit and fixed:
            blocks = refit_blocks(self, blocks, (m, n))
        links: list[tuple[int, ...]] = [() for _ in range(m)]
        marginals = np.ones(m, dtype=np.float32)  # (m,)
        pair_marginals = np.zeros((m, n), dtype=np.float32)  # (m, n)
        for rows, cols, block, allowed in blocks:
            _, local_chosen, local_marginals, local_pairs = self._decode_block(block, allowed)  # block: (len(rows), len(cols))
            pair_marginals[np.ix_(rows, cols)] = local_pairs
            for r, span in enumerate(local_chosen):
                links[rows[r]] = tuple(int(cols[c]) for c in span)
                marginals[rows[r]] = local_marginals[r]
        for simple, complex_indices in fixed.items():
            links[simple], marginals[simple] = complex_indices, 1.0
            pair_marginals[simple] = 0.0
            pair_marginals[simple, list(complex_indices)] = 1.0
        groups = [self._labelled(c, s, marginals) for c, s in groups_from_links(links)]
        return AlignmentResult(groups, similarity, plan.mask, plan.paragraph_groups, links, marginals, pair_marginals)

    def _block_allowed(self, rows: np.ndarray, cols: np.ndarray, fixed: dict[int, tuple[int, ...]]) -> np.ndarray | None:
        """The (r, K+1) allowed states of a block's known sentences (None when it has none), in the block's own indices."""
        column_of = {int(c): local for local, c in enumerate(cols)}
        local = {r: [column_of[c] for c in fixed[int(row)] if c in column_of] for r, row in enumerate(rows) if int(row) in fixed}
        return allowed_states(local, len(rows), len(cols), self.config.crf.max_span) if local else None

    def blocks(
        self, similarity: np.ndarray, simple_paragraphs: Sequence[int] | None, complex_paragraphs: Sequence[int] | None
    ) -> BlockPlan:
        """Paragraph alignment and the CRF blocks of one (m, n) similarity matrix: what :meth:`align` decodes.

        Public so that training (:mod:`models_ml.aligning.train`) sees exactly the blocks inference sees.
        """
        similarity = np.asarray(similarity, dtype=np.float32)  # (m, n)
        m, n = similarity.shape
        if m == 0 or n == 0:
            return BlockPlan([], np.zeros((m, n), dtype=bool), [])
        simple_par = _paragraph_list(simple_paragraphs, m, "simple")  # (m,)
        complex_par = _paragraph_list(complex_paragraphs, n, "complex")  # (n,)
        paragraph_groups = self._paragraph_groups(similarity, simple_par, complex_par)
        mask = sentence_pair_mask(paragraph_groups, simple_par, complex_par)  # (m, n)
        blocks = [
            (rows, cols, np.where(mask[np.ix_(rows, cols)], similarity[np.ix_(rows, cols)], self.config.masked_similarity))
            for rows, cols in _blocks(paragraph_groups, simple_par, complex_par, mask)
        ]  # each: rows (r,), cols (c,), masked similarity (r, c)
        return BlockPlan(paragraph_groups, mask, blocks)

    def _paragraph_groups(self, similarity: np.ndarray, simple_par: np.ndarray, complex_par: np.ndarray) -> list[ParagraphGroup]:
        k, l = int(simple_par.max()) + 1, int(complex_par.max()) + 1
        if self.config.paragraph_variant == "none" or k == 1 or l == 1:
            return [ParagraphGroup(tuple(range(k)), tuple(range(l)))]
        if self.config.paragraph_variant == "newsela":
            return align_paragraphs_newsela(similarity, simple_par, complex_par, self.config.newsela)
        return align_paragraphs_wikipedia(similarity, simple_par, complex_par, self.config.wikipedia)

    def _decode_block(
        self, block: np.ndarray, allowed: np.ndarray | None = None
    ) -> tuple[list[tuple[list[int], list[int]]], list[list[int]], np.ndarray, np.ndarray]:
        """Viterbi groups, chosen spans (local columns), chosen-state marginals (r,) and pair marginals (r, c) of a block (r, c).

        ``allowed`` (r, K+1) bool clamps the block's known sentences (:func:`models_ml.aligning.clamp.allowed_states`).
        """
        r, c = block.shape
        sim = torch.as_tensor(self.config.emission_scale * block, dtype=torch.float32, device=self.device)  # (r, c)
        starts, ends = self.crf.states(c)  # (K,), (K,)
        mask = None if allowed is None else torch.as_tensor(allowed, device=self.device)  # (r, K+1)
        if len(starts) + 1 > self.config.dense_state_limit:
            lattice = decode_pruned(self.crf, sim, self.config.beam, mask)
            states, candidates, candidate_marginals = lattice.states, lattice.candidates, lattice.marginals  # (r, C) each
        else:
            with torch.no_grad():
                states, candidate_marginals = self.crf.decode_with_marginals(sim, mask)  # r states, (r, K+1)
            candidates = torch.arange(len(starts) + 1, device=sim.device).expand(r, -1)  # (r, K+1)
        chosen_column = (candidates == torch.as_tensor(states, device=sim.device)[:, None]).float().argmax(dim=1)  # (r,)
        picked = candidate_marginals[torch.arange(r), chosen_column].cpu().numpy()  # (r,)
        spans = [[] if s == 0 else list(range(int(starts[s - 1]), int(ends[s - 1]))) for s in states]
        pairs = _pair_marginals(candidates, candidate_marginals, starts, ends, c)
        return states_to_groups(states, starts, ends), spans, picked.astype(np.float32), pairs

    def _labelled(self, complex_ids: list[int], simple_ids: list[int], marginals: np.ndarray) -> AlignmentGroup:
        score = float(np.mean(marginals[simple_ids]))
        label = "partial" if score < self.config.partial_threshold else "aligned"
        return AlignmentGroup(complex=tuple(complex_ids), simple=tuple(simple_ids), label=label, score=score)

    # ----- persistence --------------------------------------------------------------------

    def save(self, directory: str | Path) -> None:
        """Write config.json, crf.pt (the CRF state_dict) and checksums.json (sha256 of both)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(self.config.to_dict(), indent=2) + "\n", encoding="utf-8")
        state = {name: tensor.detach().cpu() for name, tensor in self.crf.state_dict().items()}
        torch.save(state, directory / "crf.pt")
        write_checksums(directory, MODEL_FILES)

    @classmethod
    def load(cls, directory: str | Path, *, device: str | None = None, seed: int = 0) -> Aligner:
        """Rebuild a saved aligner; ValueError naming the file when one is missing, altered or unreadable.

        ``device`` overrides the saved config's device (None keeps it).
        """
        directory = Path(directory)
        verify_checksums(directory, MODEL_FILES, "aligner")
        config_path = directory / "config.json"
        config_data = read_json(config_path)
        try:
            config = AlignerConfig.from_dict(config_data)
        except ValueError as error:
            raise ValueError(f"{config_path}: {error}") from None
        if device is not None:
            config = AlignerConfig.from_dict({**config.to_dict(), "device": device})
        aligner = cls(config, seed=seed)
        crf_path = directory / "crf.pt"
        try:
            state = torch.load(crf_path, map_location="cpu", weights_only=True)
            aligner.crf.load_state_dict(state)
        except Exception as error:  # any unpickling or shape error means a bad file
            raise ValueError(f"{crf_path}: not a CRF state_dict for this config ({error})") from None
        aligner.crf.to(aligner.device).eval()
        return aligner


def _pair_marginals(candidates: torch.Tensor, marginals: torch.Tensor, starts: np.ndarray, ends: np.ndarray, c: int) -> np.ndarray:
    """Sum each sentence's state marginals over the complex sentences their spans cover: (r, c).

    A difference array per row: +p at the span's start, -p at its end, then a running sum.
    The null state has start = end = 0 and so contributes nothing.
    """
    device = candidates.device
    first = torch.cat([torch.zeros(1, dtype=torch.long), torch.as_tensor(starts)]).to(device)  # (K+1,)
    stop = torch.cat([torch.zeros(1, dtype=torch.long), torch.as_tensor(ends)]).to(device)  # (K+1,)
    marginals = marginals.float()
    diff = torch.zeros(candidates.shape[0], c + 1, device=device)  # (r, c+1)
    diff.scatter_add_(1, first[candidates], marginals)
    diff.scatter_add_(1, stop[candidates], -marginals)
    return diff.cumsum(dim=1)[:, :c].clamp(0.0, 1.0).cpu().numpy().astype(np.float32)  # (r, c)


def _default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _paragraph_list(paragraphs: Sequence[int] | None, count: int, side: str) -> np.ndarray:
    """Paragraph index per sentence as (count,) int64; None means one paragraph."""
    if paragraphs is None:
        return np.zeros(count, dtype=np.int64)
    values = np.asarray(list(paragraphs), dtype=np.int64)  # (count,)
    if values.shape != (count,):
        raise ValueError(f"{side}_paragraphs has {values.size} entries for {count} {side} sentences")
    if count and (values.min() < 0 or np.any(np.diff(values) < 0)):
        raise ValueError(f"{side}_paragraphs must be non-negative and non-decreasing, got {values.tolist()[:20]}")
    return values


def _blocks(
    paragraph_groups: Sequence[ParagraphGroup], simple_par: np.ndarray, complex_par: np.ndarray, mask: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(simple rows, complex columns) to decode together: one block per paragraph group.

    When two groups share a simple paragraph (the merge step should prevent it), each
    simple sentence must still get one state, so everything falls back to a single block
    over the whole masked matrix.
    """
    blocks = []
    seen_rows: set[int] = set()
    for group in paragraph_groups:
        rows = _sentences_of(simple_par, group.simple)  # (r,)
        cols = _sentences_of(complex_par, group.complex)  # (c,)
        if rows.size == 0 or cols.size == 0:
            continue
        if seen_rows & set(rows.tolist()):
            return [(np.arange(mask.shape[0]), np.arange(mask.shape[1]))]
        seen_rows.update(rows.tolist())
        blocks.append((rows, cols))
    return blocks


def _sentences_of(paragraph_of: np.ndarray, paragraphs: Sequence[int]) -> np.ndarray:
    """The indices of the sentences in one of ``paragraphs``, ``paragraph_of`` (count,) non-negative: np.isin's
    answer by a lookup table, about a quarter of its cost on a paragraph group's few entries."""
    wanted = np.zeros(int(paragraph_of.max(initial=-1)) + 1, dtype=bool)  # (paragraphs,)
    wanted[[p for p in paragraphs if 0 <= p < wanted.size]] = True
    return np.flatnonzero(wanted[paragraph_of])
