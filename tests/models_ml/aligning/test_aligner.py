"""The composed aligner: groups on short hand-written English, edge cases, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models_ml.aligning.aligner import Aligner
from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.crf import CRFConfig
from models_ml.data.io import AlignmentGroup
from models_ml.similarity.encoders import load_sentence_encoder
from models_ml.similarity.measures import build_measure

COMPLEX = [
    "The city council approved a new budget for public parks on Tuesday.",
    "The mayor said the money would pay for new playgrounds and trees.",
    "The weather service predicts heavy snow in the mountains next week.",
    "The river flooded several farms in the northern valley last spring.",
    "Many farmers lost their crops.",
    "Officials promised emergency aid to the affected families.",
]
SIMPLE = [
    "The city council agreed on a new budget for parks.",
    "The mayor said the money is for playgrounds.",
    "It will also pay for trees.",
    "Last spring the river flooded farms in the north and many farmers lost their crops.",
    "Officials promised help to the families.",
]


@pytest.fixture(scope="module")
def aligner() -> Aligner:
    """The default (embedding cosine, untrained CRF) aligner on CPU; MiniLM is loaded once here.

    torch, named here: these tests assert exact groups, and int8's vectors depend on the CPU's kernels (and on the
    batch), which flipped the merge below on AVX-512 VNNI machines (CONTRIBUTING.md, "Tests that depend on numerics").
    """
    encoder = load_sentence_encoder(device="cpu", backend="torch")
    return Aligner(AlignerConfig(device="cpu"), measure=build_measure("embedding_cosine", encoder=encoder))


def _pairs(groups: list[AlignmentGroup]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(g.complex, g.simple) for g in groups]


def test_identical_documents_align_one_to_one_on_the_diagonal(aligner: Aligner) -> None:
    result = aligner.align(COMPLEX, COMPLEX)
    assert _pairs(result.groups) == [((i,), (i,)) for i in range(len(COMPLEX))]
    assert all(g.label == "aligned" and g.score is not None and g.score > 0.9 for g in result.groups)


def test_default_aligner_finds_split_merge_and_one_to_one(aligner: Aligner) -> None:
    result = aligner.align(COMPLEX, SIMPLE)
    assert _pairs(result.groups) == [
        ((0,), (0,)),
        ((1,), (1, 2)),  # split: one complex sentence, two simple ones
        ((3, 4), (3,)),  # merge: two complex sentences, one simple one
        ((5,), (4,)),
    ]
    assert result.similarity.shape == (len(SIMPLE), len(COMPLEX))
    assert result.chosen_complex[3] == (3, 4)


def test_deleted_complex_sentence_gets_no_group(aligner: Aligner) -> None:
    result = aligner.align(COMPLEX, SIMPLE)
    aligned_complex = {i for g in result.groups for i in g.complex}
    assert 2 not in aligned_complex  # the weather sentence has no simple counterpart


def test_unrelated_simple_sentence_stays_unaligned(aligner: Aligner) -> None:
    simple = [*SIMPLE[:2], "Penguins cannot fly but swim very fast.", *SIMPLE[2:]]
    result = aligner.align(COMPLEX, simple)
    assert all(2 not in g.simple for g in result.groups)
    assert result.chosen_complex[2] == ()


def test_paragraphs_restrict_alignment_to_aligned_paragraphs(aligner: Aligner) -> None:
    complex_paragraphs = [0, 0, 1, 2, 2, 2]
    simple_paragraphs = [0, 0, 0, 1, 1]
    result = aligner.align(COMPLEX, SIMPLE, complex_paragraphs, simple_paragraphs)
    assert [tuple(g) for g in result.paragraph_groups] == [((0,), (0,)), ((1,), (2,))]
    assert not result.paragraph_mask[0, 3]  # parks sentence vs flood sentence: other paragraphs
    assert _pairs(result.groups) == [((0,), (0,)), ((1,), (1, 2)), ((3, 4), (3,)), ((5,), (4,))]


def test_save_and_load_give_identical_output(aligner: Aligner, tmp_path: Path) -> None:
    aligner.save(tmp_path / "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["checksums.json", "config.json", "crf.pt"]
    loaded = Aligner.load(tmp_path / "model")
    loaded._measure = aligner.measure  # reuse the module's encoder; the config names the same one
    assert loaded.config == aligner.config
    assert loaded.align(COMPLEX, SIMPLE).groups == aligner.align(COMPLEX, SIMPLE).groups


def test_corrupted_crf_weights_raise_value_error_naming_the_file(aligner: Aligner, tmp_path: Path) -> None:
    aligner.save(tmp_path)
    with (tmp_path / "crf.pt").open("ab") as handle:
        handle.write(b"garbage")
    with pytest.raises(ValueError, match="crf.pt"):
        Aligner.load(tmp_path)


def test_missing_model_file_raises_value_error_naming_it(aligner: Aligner, tmp_path: Path) -> None:
    aligner.save(tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(ValueError, match="config.json"):
        Aligner.load(tmp_path)


def test_empty_side_gives_no_groups(aligner: Aligner) -> None:
    assert aligner.align([], SIMPLE).groups == []
    assert aligner.align(COMPLEX, []).groups == []


def test_one_sentence_documents(aligner: Aligner) -> None:
    result = aligner.align([COMPLEX[0]], [SIMPLE[0]])
    assert _pairs(result.groups) == [((0,), (0,))]
    unrelated = aligner.align([COMPLEX[0]], ["Penguins cannot fly but swim very fast."])
    assert unrelated.groups == []


def test_low_marginal_group_is_labelled_partial() -> None:
    config = AlignerConfig(measure="jaccard", device="cpu", null_score=0.2, partial_threshold=0.9, emission_scale=5.0)
    result = Aligner(config).align(["a b c d", "x y z w"], ["a b c q", "x y z w"])
    labels = {g.simple: g.label for g in result.groups}
    assert labels == {(0,): "partial", (1,): "aligned"}


@pytest.mark.slow
def test_two_thousand_sentences_per_side_in_paragraphs() -> None:
    """A large document stays bounded: one (m, n) float32 matrix, CRFs per paragraph block."""
    rng = np.random.default_rng(0)
    vocabulary = [f"w{i}" for i in range(5000)]
    sentences = [" ".join(rng.choice(vocabulary, size=8, replace=False)) for _ in range(2000)]
    paragraphs = [i // 20 for i in range(2000)]
    config = AlignerConfig(measure="jaccard", device="cpu", crf=CRFConfig(max_span=1), null_score=0.5)
    result = Aligner(config).align(sentences, sentences, paragraphs, paragraphs)
    assert result.similarity.shape == (2000, 2000) and result.similarity.dtype == np.float32
    assert _pairs(result.groups) == [((i,), (i,)) for i in range(2000)]


@pytest.mark.slow
def test_two_thousand_sentences_without_paragraph_breaks_use_the_pruned_lattice() -> None:
    """One 2000 x 2000 block with spans up to 3 (6,000 states): above dense_state_limit, so pruned."""
    rng = np.random.default_rng(1)
    vocabulary = [f"w{i}" for i in range(5000)]
    sentences = [" ".join(rng.choice(vocabulary, size=8, replace=False)) for _ in range(2000)]
    config = AlignerConfig(measure="jaccard", device="cpu", null_score=0.5)
    result = Aligner(config).align(sentences, sentences)
    assert _pairs(result.groups) == [((i,), (i,)) for i in range(2000)]
    assert result.pair_marginals.shape == (2000, 2000)
    assert np.all(np.diag(result.pair_marginals) > 0.9)


def test_pair_marginals_sum_span_marginals_over_covered_sentences(aligner: Aligner) -> None:
    result = aligner.align(COMPLEX, SIMPLE)
    marginals = result.pair_marginals  # (m, n)
    assert marginals.shape == (len(SIMPLE), len(COMPLEX))
    assert np.all((marginals >= 0) & (marginals <= 1))
    assert marginals[3, 3] > 0.5 and marginals[3, 4] > 0.5  # the merge covers both complex sentences
    assert marginals[0, 0] == pytest.approx(result.state_marginals[0], abs=0.05)
    assert marginals[0, 3] < 0.01


def test_pruned_and_dense_decoding_agree_when_the_beam_is_wide(aligner: Aligner) -> None:
    dense = aligner.align(COMPLEX, SIMPLE)
    pruned_config = AlignerConfig.from_dict({**aligner.config.to_dict(), "dense_state_limit": 1, "beam": 4})
    pruned = Aligner(pruned_config, measure=aligner.measure).align(COMPLEX, SIMPLE)
    assert _pairs(pruned.groups) == _pairs(dense.groups)
