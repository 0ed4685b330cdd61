"""How a vector is stored: its non-zero cells when that is smaller, else every cell (ADR 0048).

The hashing embedder gives a table or column document a handful of non-zero cells out of 256, so a
dense row (1 KB) is mostly zeros: at 200,000 column documents that was 200 MB written per build. A
sparse blob is the (uint16 cell, float32 value) pairs of the non-zero cells, 6 bytes each; a dense
blob is the float32 row. The length tells which: a sparse blob is always shorter than a dense one.
Both round-trip exactly, so the matrix a search multiplies is the one the embedder returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from khive.index.documents import Item, embed_texts
from khive.index.embed import CellEmbedder, Cells, Embedder

CELL = np.dtype([("index", "<u2"), ("value", "<f4")])  # packed: 6 bytes, no padding
_MAX_SPARSE_DIMENSIONS = 1 << 16  # a cell index must fit in uint16


def blobs(matrix: npt.NDArray[np.float32]) -> list[bytes]:
    """One blob per row of ``matrix`` (float32, one row per document)."""
    dense = matrix.astype("<f4", copy=False)
    at_row, at_cell = np.nonzero(dense)  # row-major: each row's cells are contiguous and ascending
    return cell_blobs(Cells(dense.shape[1], np.bincount(at_row, minlength=len(dense)).astype(np.int64),
                            at_cell.astype(np.int64), dense[at_row, at_cell]), dense)


def cell_blobs(cells: Cells, dense: npt.NDArray[np.float32] | None = None) -> list[bytes]:
    """One blob per row of ``cells``; ``dense``: the same rows whole, when the caller has them."""
    dims = cells.dimensions
    whole = dims * 4
    if dims >= _MAX_SPARSE_DIMENSIONS:
        return [row.tobytes() for row in (dense if dense is not None else cells.dense()).astype("<f4", copy=False)]
    packed = np.empty(len(cells.index), dtype=CELL)
    packed["index"] = cells.index
    packed["value"] = cells.value
    raw = packed.tobytes()
    out = []
    start = 0
    for row, count in enumerate(cells.counts.tolist()):
        end = start + count
        # sparse only when strictly shorter, so a blob of exactly 4 * dims bytes is always a whole row
        if count * CELL.itemsize < whole:
            out.append(raw[start * CELL.itemsize:end * CELL.itemsize])
        elif dense is not None:
            out.append(dense[row].astype("<f4", copy=False).tobytes())
        else:
            one = np.zeros(dims, dtype="<f4")
            one[cells.index[start:end]] = cells.value[start:end]
            out.append(one.tobytes())
        start = end
    return out


def matrix(stored: Sequence[bytes], dims: int) -> npt.NDArray[np.float32]:
    """The float32 matrix (one row per blob, in order) that ``blobs`` was given."""
    out = np.zeros((len(stored), dims), dtype=np.float32)
    dense_size = dims * 4
    lengths = np.fromiter((len(blob) for blob in stored), dtype=np.int64, count=len(stored))
    is_dense = lengths == dense_size
    if is_dense.any():
        positions = np.flatnonzero(is_dense)
        out[positions] = np.frombuffer(b"".join(stored[i] for i in positions.tolist()),
                                       dtype="<f4").reshape(len(positions), dims)
    sparse: Any = ~is_dense
    if sparse.any():
        positions = np.flatnonzero(sparse)
        if (lengths[positions] % CELL.itemsize).any():
            raise ValueError(f"a stored vector is neither {dense_size} bytes nor whole {CELL.itemsize}-byte cells")
        cells = np.frombuffer(b"".join(stored[i] for i in positions.tolist()), dtype=CELL)
        rows = np.repeat(positions, lengths[positions] // CELL.itemsize)
        out[rows, cells["index"].astype(np.intp)] = cells["value"]
    return out


def vector_rows(embedder: Embedder | None, rowids: Sequence[int], items: Sequence[Item]
                ) -> list[tuple[int, str, bytes]]:
    """The ``vectors`` rows of ``items``' documents (rows ``rowids``, in order): none without an embedder."""
    if embedder is None or not items:
        return []
    texts = [text for item in items for text in embed_texts(item)]
    stored = cell_blobs(embedder.cells(texts)) if isinstance(embedder, CellEmbedder) \
        else blobs(embedder.embed(texts).astype(np.float32, copy=False))
    return [(rowid, embedder.name, blob) for rowid, blob in zip(rowids, stored, strict=True)]
