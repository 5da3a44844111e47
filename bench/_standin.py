"""The benches' stand-in for a sentence encoder: vectors from the text alone, at almost no cost, so that a mining bench
times the pipeline and not the encoder. No Django here: worker processes load it (``bench/_standin_worker.py``)."""

from __future__ import annotations

import zlib

import numpy as np


def topic_encoder(dim: int):
    """Stand-in for MiniLM: the vector of "t<topic>x..." texts is the topic's vector plus per-text noise."""
    cache: dict[int, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            topic = int(text.split("x", 1)[0][1:])
            if topic not in cache:
                cache[topic] = np.random.default_rng(topic).normal(size=dim).astype(np.float32)
            noise = np.random.default_rng(zlib.crc32(text.encode())).normal(size=dim).astype(np.float32)
            rows.append(cache[topic] + 0.5 * noise)
        matrix = np.stack(rows)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    return encode
