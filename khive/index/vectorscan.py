"""The stored vectors a search scores, kept as their non-zero cells when they are sparse (ADR 0049).

A dense float32 matrix of 210,000 hashing-embedder rows is 215 MB, nearly all zeros; making it (the page
faults of touching every row) was most of the vector lane's cost in the first search after a scan. Sparse
rows are kept as cells instead, and a query scores exactly the rows that can reach the floor: an upper bound
of each row's cosine (the sum of |cell value * query cell| over its cells, one ``bincount``) rules out the
others, and the rows left are made dense a few thousand at a time and multiplied as before: each kept score is
the float32 the whole matrix gave (measured bit for bit at 10,000 tables; only a row whose cells cancel to
about zero was seen to round differently, as main's kind blocks already could).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from itertools import groupby, islice
from typing import Any

import numpy as np
import numpy.typing as npt

from khive.index import vectorblob
from khive.index.vectorblob import CELL

BLOCK_ROWS = 4096  # rows made dense at once: a 4 MB block at 256 dimensions, reused across queries
Positions = npt.NDArray[np.int64]
LOAD_BATCH = 8192  # rows read at once when loading
_BOUND_SLACK = 1e-3  # the float64 bound against the float32 product: keep a row a rounding error below the floor


class VectorRows:
    """Stored vectors, one row per blob, that ``scores`` multiplies by a query."""

    def __init__(self, lengths: npt.NDArray[np.int64], data: bytes, dims: int,
                 order: Positions | None = None) -> None:
        """Rows whose blobs are ``data`` cut at ``lengths`` (the stored blobs of ``vectorblob``, joined); a search
        sees them in ``order`` (positions of those rows; all of them in turn when not given)."""
        self.dims = dims
        self._rows = len(lengths)
        self._order = np.arange(self._rows, dtype=np.int64) if order is None else order
        self._dense: npt.NDArray[np.float32] | None = None
        if (lengths == dims * 4).any() or (lengths % CELL.itemsize).any():
            ends = np.cumsum(lengths).tolist()  # dense rows (or a damaged blob: matrix names it)
            self._dense = vectorblob.matrix([data[a:b] for a, b in zip([0, *ends], ends, strict=False)], dims)
            lengths, data = np.zeros(0, dtype=np.int64), b""
        cells = np.frombuffer(data, dtype=CELL)
        self._counts = lengths // CELL.itemsize
        self._starts = np.cumsum(self._counts) - self._counts
        self._row_of_cell = np.repeat(np.arange(len(self._counts), dtype=np.intp), self._counts)
        self._index = cells["index"].astype(np.intp)
        self._value = cells["value"].astype(np.float32)
        self._block: npt.NDArray[np.float32] | None = None
        self._block_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._order)

    def scores(self, query: npt.NDArray[np.float32], floor: float) -> npt.NDArray[np.float32]:
        """Each row's dot product with ``query``, in ``order``; a row that cannot reach ``floor`` (> 0) scores 0."""
        if self._dense is not None:
            return (self._dense @ query)[self._order]
        out = np.zeros(self._rows, dtype=np.float32)
        reach = np.abs(self._value.astype(np.float64) * query[self._index])
        bound = np.bincount(self._row_of_cell, weights=reach, minlength=self._rows)
        kept = np.flatnonzero((bound > 0) & (bound * (1 + _BOUND_SLACK) >= floor))
        out[kept] = self._products(kept, query)
        return out[self._order]

    def scores_at(self, positions: Positions, query: npt.NDArray[np.float32], floor: float
                  ) -> npt.NDArray[np.float32]:
        """``scores`` of the rows at ``positions`` of ``order`` only, in that order: a search of some kinds
        (the wiki lane's pages among 200,000 columns) bounds and multiplies only their rows."""
        rows = self._order[positions]
        if self._dense is not None:
            return (self._dense @ query)[rows]
        counts = self._counts[rows]
        cells = self._cells(rows, counts)
        reach = np.abs(self._value[cells].astype(np.float64) * query[self._index[cells]])
        bound = np.bincount(np.repeat(np.arange(len(rows), dtype=np.intp), counts), weights=reach,
                            minlength=len(rows))
        kept = np.flatnonzero((bound > 0) & (bound * (1 + _BOUND_SLACK) >= floor))
        out = np.zeros(len(rows), dtype=np.float32)
        out[kept] = self._products(rows[kept], query)
        return out

    def _cells(self, rows: npt.NDArray[np.intp], counts: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """The positions of ``rows``' cells, row after row."""
        return np.repeat(self._starts[rows] - (np.cumsum(counts) - counts), counts) + \
            np.arange(int(counts.sum()), dtype=np.intp)

    def _products(self, kept: npt.NDArray[np.intp], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The dot products of the stored rows ``kept`` with ``query``, made dense a block at a time."""
        out = np.empty(len(kept), dtype=np.float32)
        with self._block_lock:
            block = self._block
            if block is None:
                block = self._block = np.zeros((BLOCK_ROWS, self.dims), dtype=np.float32)
            for start in range(0, len(kept), BLOCK_ROWS):
                rows = kept[start:start + BLOCK_ROWS]
                counts = self._counts[rows]
                local = np.repeat(np.arange(len(rows), dtype=np.intp), counts)
                cells = self._cells(rows, counts)
                dense = block[:len(rows)]
                dense[:] = 0
                dense[local, self._index[cells]] = self._value[cells]
                out[start:start + len(rows)] = dense @ query
        return out


def load(vectors: Iterator[Sequence[Any]], kinds: Iterator[Sequence[Any]], dims: int
         ) -> tuple[VectorRows, Positions, dict[str, Positions]]:
    """(the vectors, their document rowids, kind -> row positions) from the (rowid, vector) rows of the vectors
    table and the (kind, rowid) rows of the documents, kind by kind. Both are read in storage order a batch at a
    time: a batch's Python objects are freed before the next is read (a live object per row for 210,000 rows
    was most of the load, the memory new to the process), and neither read looks a row up by rowid."""
    lengths: list[Positions] = []
    stored: list[Positions] = []
    data: list[bytes] = []
    while batch := list(islice(vectors, LOAD_BATCH)):
        ids, blobs = zip(*batch, strict=True)
        stored.append(np.fromiter(ids, dtype=np.int64, count=len(ids)))
        lengths.append(np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)))
        data.append(b"".join(blobs))
    runs: list[tuple[str, Positions]] = []  # (kind, its rowids) in order
    while batch := list(islice(kinds, LOAD_BATCH)):
        for kind, group in groupby(batch, key=lambda row: str(row[0])):
            rowids = [row[1] for row in group]
            runs.append((kind, np.fromiter(rowids, dtype=np.int64, count=len(rowids))))
    stored_ids = np.concatenate(stored) if stored else np.zeros(0, dtype=np.int64)
    by_id = np.argsort(stored_ids, kind="stable")
    kind_rows: dict[str, Positions] = {}
    order: list[Positions] = []
    start = 0
    for kind, group in groupby(runs, key=lambda run: run[0]):
        wanted = np.concatenate([rowids for _, rowids in group])
        at = np.searchsorted(stored_ids, wanted, sorter=by_id).clip(max=max(len(stored_ids) - 1, 0))
        present = by_id[at][stored_ids[by_id[at]] == wanted] if len(stored_ids) else at[:0]
        if len(present):  # a kind without vectors has no block
            order.append(present)
            kind_rows[kind] = np.arange(start, start + len(present), dtype=np.int64)
            start += len(present)
    positions = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    joined = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    return VectorRows(joined, b"".join(data), dims, positions), stored_ids[positions], kind_rows
