"""Embedders for the vector lane. The default is deterministic feature hashing, so the lane always
works offline: each token maps through FNV-1a to a (dimension, sign) pair, counts accumulate, and the
vector is L2-normalised. Lexically similar texts share tokens and so point the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
_TOKEN_RE = re.compile(r"[a-z0-9]+")
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


class Embedder(Protocol):
    name: str
    dimensions: int
    # Below this cosine a hit found only by the vector lane is noise, not evidence.
    min_similarity: float

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text (a zero row for a text without tokens)."""
        ...


def fnv1a_64(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


class HashingEmbedder:
    def __init__(self, dimensions: int = 256):
        self.dimensions = dimensions
        self.name = f"hash-fnv1a-{dimensions}"
        # Hashing shares only exact tokens (and collisions), so a vector-only hit must be a near-duplicate.
        self.min_similarity = 0.5
        self._slots: dict[str, tuple[int, float]] = {}  # token -> (dimension, sign); vocabularies are small

    def _slot(self, token: str) -> tuple[int, float]:
        slot = self._slots.get(token)
        if slot is None:
            value = fnv1a_64(token.encode())
            slot = (value % self.dimensions, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._slots) < 1_000_000:
                self._slots[token] = slot
        return slot

    def embed(self, texts: Sequence[str]) -> Vectors:
        # Every (row, dimension) cell a token adds its sign to, summed at once: a Python loop per token writing
        # into numpy cells costs more than the hashing. Sums of +-1 are exact, so rows equal one-by-one ones.
        cells: list[int] = []
        signs: list[float] = []
        known = self._slots
        for row, text in enumerate(texts):
            base = row * self.dimensions
            for token in tokens(text):
                dimension, sign = known.get(token) or self._slot(token)
                cells.append(base + dimension)
                signs.append(sign)
        size = len(texts) * self.dimensions
        sums = np.bincount(np.array(cells, dtype=np.int64), weights=np.array(signs, dtype=np.float64), minlength=size)
        out = sums.astype(np.float32).reshape(len(texts), self.dimensions)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
