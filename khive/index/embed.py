"""Embedders for the vector lane. The default is deterministic feature hashing, so the lane always
works offline: each token maps through FNV-1a to a (dimension, sign) pair, counts accumulate, and the
vector is L2-normalised. Lexically similar texts share tokens and so point the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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


@dataclass(frozen=True, slots=True)
class Cells:
    """The non-zero cells of a batch of vectors, row by row: ``counts[r]`` cells of row r, in ascending cell order,
    follow those of row r - 1 in ``index`` and ``value``."""

    dimensions: int
    counts: npt.NDArray[np.int64]
    index: npt.NDArray[np.int64]
    value: npt.NDArray[np.float32]

    def dense(self) -> Vectors:
        out = np.zeros((len(self.counts), self.dimensions), dtype=np.float32)
        out[np.repeat(np.arange(len(self.counts)), self.counts), self.index] = self.value
        return out


@runtime_checkable
class CellEmbedder(Embedder, Protocol):
    """An embedder whose vectors are mostly zeros, which can give their non-zero cells without the whole rows."""

    def cells(self, texts: Sequence[str]) -> Cells: ...


# Below this, a sum of squares of whole counts is exact in float32 whatever the order it is added in, so the
# norm of a row computed from its cells equals the one computed over the whole row.
_EXACT_FLOAT32 = float(1 << 24)
_MAX_KNOWN = 1_000_000


class HashingEmbedder:
    def __init__(self, dimensions: int = 256):
        self.dimensions = dimensions
        self.name = f"hash-fnv1a-{dimensions}"
        # Hashing shares only exact tokens (and collisions), so a vector-only hit must be a near-duplicate.
        self.min_similarity = 0.5
        # token -> its signed cell: dimension + 1, negative for a -1 sign (one int: the batch maps tokens in C)
        self._codes: dict[str, int] = {}

    def _code(self, token: str) -> int:
        code = self._codes.get(token)
        if code is None:
            value = fnv1a_64(token.encode())
            code = (value % self.dimensions + 1) * (1 if (value >> 63) & 1 else -1)
            if len(self._codes) < _MAX_KNOWN:  # vocabularies are small; a flood of unique tokens is not kept
                self._codes[token] = code
        return code

    def _codes_of(self, tokens: list[str]) -> Iterator[int]:
        known = self._codes
        for token in set(tokens).difference(known):
            self._code(token)
        if len(known) < _MAX_KNOWN:  # every token is known now: mapped in C, not by a Python loop
            return map(known.__getitem__, tokens)
        return map(self._code, tokens)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.cells(texts).dense()

    def cells(self, texts: Sequence[str]) -> Cells:
        # Each token adds its sign to one (row, dimension) cell. The cells are summed with numpy over the batch's
        # tokens only, never over rows x dimensions: a column's text sets a handful of 256 cells. Sums of +-1 are
        # exact, so every row equals the one a text alone gives.
        rows = len(texts)
        lengths = np.zeros(rows, dtype=np.int64)
        every: list[str] = []
        for row, text in enumerate(texts):
            found = _TOKEN_RE.findall(text.lower())
            lengths[row] = len(found)
            every.extend(found)
        codes = np.fromiter(self._codes_of(every), dtype=np.int64, count=len(every))
        keys = np.repeat(np.arange(rows, dtype=np.int64), lengths) * self.dimensions + (np.abs(codes) - 1)
        cells, inverse = np.unique(keys, return_inverse=True)
        sums = np.bincount(inverse, weights=np.sign(codes).astype(np.float64), minlength=len(cells))
        kept = sums != 0  # a +1 and a -1 in one cell cancel: the cell is zero, as in the whole row
        cells, sums = cells[kept], sums[kept]
        row_of = cells // self.dimensions
        squares = np.bincount(row_of, weights=sums * sums, minlength=rows)
        norms = np.sqrt(squares.astype(np.float32))
        values = sums.astype(np.float32) / norms[row_of]
        for row in np.flatnonzero(squares >= _EXACT_FLOAT32).tolist():
            # Past float32's exact whole numbers the sum of squares depends on the order of the additions: such a
            # row (a token repeated thousands of times in one text) is normalised over the whole row, as before.
            mine = row_of == row
            whole = np.zeros((1, self.dimensions), dtype=np.float32)
            whole[0, cells[mine] % self.dimensions] = sums[mine]
            values[mine] = sums[mine].astype(np.float32) / np.linalg.norm(whole, axis=1, keepdims=True)[0, 0]
        return Cells(self.dimensions, np.bincount(row_of, minlength=rows).astype(np.int64),
                     cells % self.dimensions, values.astype(np.float32, copy=False))
