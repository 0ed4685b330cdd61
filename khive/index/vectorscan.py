"""The stored vectors a search scores, kept as their non-zero cells when they are sparse (ADR 0049).

A dense float32 matrix of 210,000 hashing-embedder rows is 215 MB, nearly all zeros; making it (the page
faults of touching every row) was most of the vector lane's cost in the first search after a scan. Sparse
rows are kept as cells instead, and a query scores exactly the rows that can reach the floor: an upper bound
of each row's cosine (the sum of |cell value * query cell| over its cells, one ``bincount``) rules out the
others, and the rows left are made dense a few thousand at a time and multiplied as before. A row's product
does not depend on which other rows are in the block, so each kept score is the float32 the whole matrix gave.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from khive.index import vectorblob
from khive.index.vectorblob import CELL

BLOCK_ROWS = 4096  # rows made dense at once: a 4 MB block at 256 dimensions, reused across queries
_BOUND_SLACK = 1e-3  # the float64 bound against the float32 product: keep a row a rounding error below the floor


class VectorRows:
    """The vectors of ``stored`` blobs, one row each in order, that ``scores`` multiplies by a query."""

    def __init__(self, stored: Sequence[bytes], dims: int) -> None:
        self.dims = dims
        lengths = np.fromiter((len(blob) for blob in stored), dtype=np.int64, count=len(stored))
        self._dense: npt.NDArray[np.float32] | None = None
        if (lengths == dims * 4).any() or (lengths % CELL.itemsize).any():
            self._dense = vectorblob.matrix(stored, dims)  # dense rows (or a damaged blob: matrix names it)
            lengths = np.zeros(0, dtype=np.int64)
        cells = np.frombuffer(b"".join(stored), dtype=CELL) if self._dense is None else np.zeros(0, dtype=CELL)
        self._counts = lengths // CELL.itemsize
        self._starts = np.cumsum(self._counts) - self._counts
        self._row_of_cell = np.repeat(np.arange(len(self._counts), dtype=np.intp), self._counts)
        self._index = cells["index"].astype(np.intp)
        self._value = cells["value"].astype(np.float32)
        self._rows = len(stored)
        self._block: npt.NDArray[np.float32] | None = None
        self._block_lock = threading.Lock()

    def __len__(self) -> int:
        return self._rows

    def scores(self, query: npt.NDArray[np.float32], floor: float) -> npt.NDArray[np.float32]:
        """Each row's dot product with ``query``; a row that cannot reach ``floor`` (> 0) scores 0."""
        if self._dense is not None:
            return self._dense @ query
        out = np.zeros(self._rows, dtype=np.float32)
        reach = np.abs(self._value.astype(np.float64) * query[self._index])
        bound = np.bincount(self._row_of_cell, weights=reach, minlength=self._rows)
        kept = np.flatnonzero((bound > 0) & (bound * (1 + _BOUND_SLACK) >= floor))
        with self._block_lock:
            block = self._block
            if block is None:
                block = self._block = np.zeros((BLOCK_ROWS, self.dims), dtype=np.float32)
            for start in range(0, len(kept), BLOCK_ROWS):
                rows = kept[start:start + BLOCK_ROWS]
                counts = self._counts[rows]
                local = np.repeat(np.arange(len(rows), dtype=np.intp), counts)
                cells = np.repeat(self._starts[rows] - (np.cumsum(counts) - counts), counts) + \
                    np.arange(int(counts.sum()), dtype=np.intp)
                dense = block[:len(rows)]
                dense[:] = 0
                dense[local, self._index[cells]] = self._value[cells]
                out[rows] = dense @ query
        return out
